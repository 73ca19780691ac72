"""RedisBloomFilter: a classic or blocked Bloom filter whose bits live in Redis.

- The bits live in Redis exactly as the local payload: local bit ``i`` (bit
  ``i % 8`` of byte ``i // 8``, LSB first) is Redis bit offset ``i ^ 7``
  (Redis numbers the bits of a byte from the most significant one), so the
  Redis string *is* the payload byte for byte and :meth:`to_local` is a copy.
- Probe positions are computed on the client by an empty local filter of the
  same shape (``_bit_positions``): same hashing, seed, secret, key function.
  Redis never sees the keys, only bit offsets.
- ``add`` is ONE Lua script call that runs a single ``BITFIELD`` with k
  ``SET u1`` sub-commands: it returns the old bits, so "was new" is exact,
  the key is all-or-nothing, and the same script bumps the shard's exact
  counter of new adds (what the local header calls ``count``).
- ``add_many`` sends one script call per chunk of keys and per shard,
  pipelined; a chunk runs atomically on the server.  ``contains_many`` on a
  plain client sends no script: one ``GETRANGE`` of the key's 64-byte block
  per key (blocked layout; the k bits are tested here) or one
  ``BITFIELD_RO`` per key (classic).  On a plain client both batch calls
  write hand-packed round trips, one ahead of the replies (docs/redis.md,
  "Throughput"); cluster clients use redis-py pipelines.
- Sharded mode (blocked layout): shard ``s`` holds the contiguous blocks
  ``[s * B, (s + 1) * B)`` of the one global layout, under the hash tag
  ``{name:s}``; a key's block decides its shard, so positions, answers and
  the bytes of :meth:`to_local` are those of the unsharded filter.
"""

from __future__ import annotations

import re
import secrets as _secrets
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

from redis.exceptions import ConnectionError as _RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as _RedisTimeoutError

from .. import _core
from ..bloom import KIND_BLOCKED_BLOOM, KIND_BLOOM, BlockedBloomFilter, BloomBase, BloomFilter
from ..design import BLOCK_BITS, design
from ..errors import CapacityError
from ._admin import copy_structure, refuse_shallow_copy
from ._bloom_local import LocalCopies
from ._bloom_raw import RawContains
from ._layout import (
    MAX_STRING_BYTES,
    REDIS_FORMAT,
    REDIS_FORMAT_BLOCKED_V1,
    as_text,
    check_client,
    check_name,
    expect_params,
    is_cluster,
    meta_key_of,
    read_meta,
    shard_key_names,
    union_count,
)
from ._scripts import (
    CLAIM_SCRIPT,
    CLEAR_SHARD,
    INIT_SHARD,
    SCRIPTS,
    Script,
    bloom_script,
)
from ._wire import (
    ErrorReply,
    RawReader,
    chunked,
    map_response_error,
    resp_encode,
    settle_replies,
    wrap_connection_error,
)
from .errors import (
    FilterExistsError,
    FilterMismatchError,
    FilterNotFoundError,
    RedisConnectionLost,
    RedisFilterError,
)

__all__ = ["RedisBloomFilter"]


class RedisBloomFilter(LocalCopies, RawContains):
    """A classic or blocked Bloom filter whose bits live in Redis.

    Create with :meth:`create`, attach with :meth:`open` (or
    :meth:`open_or_create`).  Keys are hashed exactly like the local
    :class:`bloomkit.BloomFilter` / :class:`bloomkit.BlockedBloomFilter`
    (seed, ``secret=``, ``key=``); :meth:`to_local` returns a local filter
    byte-identical to one built from the same keys in the same order.
    """

    #: keys per script call in add_many / contains_many
    chunk_size: int = 1000
    #: script calls per pipeline round trip
    pipeline_depth: int = 8
    #: add_many / contains_many on a plain client send hand-packed RESP, one
    #: round trip ahead of the replies (see docs/redis.md, "Throughput")
    raw_protocol: bool = True
    #: round trips written before the oldest one's replies are read (raw path)
    _trips_ahead: int = 1

    _layouts: ClassVar[dict[str, tuple[int, int, type[Any]]]] = {
        "classic": (KIND_BLOOM, 0, BloomFilter),
        "blocked": (KIND_BLOCKED_BLOOM, 1, BlockedBloomFilter),
    }

    def __init__(self, client: Any, name: str, meta: dict[str, str], secret: bytes | None,
                 key: Any) -> None:
        """Use :meth:`create` or :meth:`open`."""
        self.client = client
        self.name = name
        self.layout: str = meta["layout"]
        self._kind, layout_id, self._cls = self._layouts[self.layout]
        #: the blocked layout version (0: created before version 1 existed)
        self.layout_version = int(meta.get("layout_version", "0"))
        layout_id += self.layout_version
        self.num_bits = int(meta["num_bits"])
        self.num_hashes = int(meta["num_hashes"])
        self.capacity = int(meta["capacity"])
        self.error_rate = float.fromhex(meta["error_rate"])
        self.seed = int(meta["seed"])
        self.keyed = meta["keyed"] == "1"
        self._key_check = int(meta["key_check"])
        self.shards = int(meta["shards"])
        self.shard_bytes = int(meta["shard_bytes"])
        self.payload_len = int(meta["payload_len"])
        self._gen = meta["gen"]
        self._secret = secret
        self._keyfunc = key
        # The position calculator: an empty local filter of the same shape.
        # calloc'd, so its pages are never touched (virtual memory only).
        self._proto: Any = BloomBase.__new__(
            self._cls, layout_id, self.num_bits, self.num_hashes, self.capacity,
            self.error_rate, seed=self.seed, secret=secret, key=key,
        )
        self._shard_bits = self.shard_bytes * 8
        self._bits_keys, self._hash_keys = shard_key_names(name, self.shards)
        self._lens = [
            min(self.shard_bytes, self.payload_len - s * self.shard_bytes)
            for s in range(self.shards)
        ]
        self._cluster = is_cluster(client)
        k = self.num_hashes
        self._add_script = bloom_script("add", k)
        self._contains_script = bloom_script("contains", k)
        # The raw contains_many path (see _contains_trip): one command per
        # key, then each shard's gen and length.
        if self.layout == "blocked":
            # GETRANGE of the key's 64-byte block; the bits are tested here.
            self._raw_heads = [
                f"*4\r\n$8\r\nGETRANGE\r\n${len(b.encode())}\r\n{b}\r\n"
                for b in self._bits_keys
            ]
            self._raw_size = 71  # $64 CR LF, the block, CR LF
            self._raw_lead = b"$64\r\n"
            self._raw_pattern = re.compile(b"(?:\\$64\r\n.{64}\r\n)*", re.DOTALL)
            self._num_blocks = int(self._proto.num_blocks)
            self._blocks_per_shard = self.shard_bytes // (BLOCK_BITS // 8)
            # A one-block filter of the same hashing tests a block's k bits:
            # the in-block bits depend on the key's hash only, not on the
            # number of blocks (bk_bloom.c), and block 0 is its whole payload.
            self._tiny_header = self._cls._header(
                layout_id, BLOCK_BITS, k, self.capacity, self.error_rate, seed=self.seed,
                secret=secret)
        else:
            # BITFIELD_RO with k GET u1; the reply is *k then k of :0 / :1.
            self._raw_heads = [
                f"*{2 + 3 * k}\r\n$11\r\nBITFIELD_RO\r\n${len(b.encode())}\r\n{b}\r\n"
                for b in self._bits_keys
            ]
            self._raw_size = len(f"*{k}\r\n") + 4 * k
            self._raw_lead = b"*%d\r\n" % k
            self._raw_pattern = re.compile(
                b"(?:\\*%d\r\n(?::[01]\r\n){%d})*" % (k, k), re.DOTALL)
        # Packing tables, indexed by the number of digits of an offset: each
        # piece starts with the CR LF that ends the previous argument, so a
        # key costs a few appends and no f-string (about a third fewer
        # instructions, callgrind); the stream's first CR LF is cut off.
        if self.layout == "blocked":
            self._pack_first = [[f"\r\n{h}${d}\r\n" for d in range(21)]
                                for h in self._raw_heads]
            self._pack_next = [f"\r\n${d}\r\n" for d in range(21)]
        else:
            self._pack_first = [["\r\n" + h[:-2]] for h in self._raw_heads]
            self._pack_next = [f"\r\n$3\r\nGET\r\n$2\r\nu1\r\n${d}\r\n" for d in range(21)]
        self._raw_tail = "".join(
            f"*3\r\n$4\r\nHGET\r\n${len(h.encode())}\r\n{h}\r\n$3\r\ngen\r\n"
            f"*2\r\n$6\r\nSTRLEN\r\n${len(b.encode())}\r\n{b}\r\n"
            for b, h in zip(self._bits_keys, self._hash_keys, strict=True)
        )

    # ---- creation, opening, deletion ------------------------------------------

    @classmethod
    def create(
        cls,
        client: Any,
        name: str,
        capacity: int,
        error_rate: float = 0.01,
        *,
        layout: str = "classic",
        seed: int = 0,
        shards: int = 1,
        secret: bytes | None = None,
        key: Any = None,
    ) -> RedisBloomFilter:
        """Create a new shared filter called ``name``; an existing one is an error.

        ``shards > 1`` splits a blocked filter over that many keys (Redis
        Cluster).  A payload over :data:`MAX_STRING_BYTES` per key is refused
        before anything is written.
        """
        check_client(client)
        name = check_name(name)
        if layout not in cls._layouts:
            raise ValueError(f"layout must be 'classic' or 'blocked', not {layout!r}")
        if isinstance(shards, bool) or not isinstance(shards, int):
            raise TypeError(f"shards must be an int, not {type(shards).__name__}")
        if shards < 1 or shards > 16384:
            raise ValueError("shards must be in [1, 16384]")
        if shards > 1 and layout != "blocked":
            raise ValueError(
                "sharding needs layout='blocked': a classic filter spreads a key's probes "
                "over the whole bit array, so one key would span several shards and its add "
                "could not be one atomic command"
            )
        d = design(capacity, error_rate, layout)  # blocked: the current layout version
        payload_len = d.nbytes
        if shards == 1:
            shard_bytes = payload_len
        else:
            per = -(-d.num_blocks // shards)
            if (shards - 1) * per >= d.num_blocks:
                raise ValueError(
                    f"{shards} shards is too many for {d.num_blocks} blocks (a shard would be "
                    "empty); use fewer shards"
                )
            shard_bytes = per * (BLOCK_BITS // 8)
        if shard_bytes > MAX_STRING_BYTES:
            need = -(-payload_len // MAX_STRING_BYTES)
            hint = (
                f"use layout='blocked' with shards >= {need}"
                if shards == 1
                else f"use shards >= {need}"
            )
            raise CapacityError(
                f"the filter needs {payload_len:,} bytes; {shard_bytes:,} in one Redis key is "
                f"over the 512 MiB Redis string limit: {hint}"
            )
        lcls = cls._layouts[layout][2]
        # key_check of this secret (0 when unkeyed), from a tiny local filter.
        tiny = lcls.with_size(512, 1, seed=seed, secret=secret)
        key_check = _core.peek_header(tiny.to_bytes())["key_check"]
        meta = {
            "format": REDIS_FORMAT_BLOCKED_V1 if d.layout_version == 1 else REDIS_FORMAT,
            "structure": "bloom",
            "layout": layout,
            "num_bits": str(d.num_bits),
            "num_hashes": str(d.num_hashes),
            "capacity": str(d.capacity),
            "error_rate": float(d.error_rate).hex(),
            "seed": str(tiny.seed),
            "keyed": "1" if secret is not None else "0",
            "key_check": str(key_check),
            "shards": str(shards),
            "shard_bytes": str(shard_bytes),
            "payload_len": str(payload_len),
            "gen": _secrets.token_hex(8),
            "state": "creating",
        }
        if layout == "blocked":
            meta["layout_version"] = str(d.layout_version)
        obj = cls(client, name, meta, secret, key)  # validates seed/secret/key locally
        meta_key = meta_key_of(name)
        flat = [x for kv in meta.items() for x in kv]
        try:
            if not CLAIM_SCRIPT.run(client, [meta_key], flat):
                raise FilterExistsError(f"a Redis key {meta_key!r} already exists: "
                                        f"filter {name!r} exists (open it, or delete it first)")
            for s in range(shards):
                INIT_SHARD.run(client, [obj._bits_keys[s], obj._hash_keys[s]],
                                [obj._gen, obj._lens[s]])
            client.hset(meta_key, "state", "ready")
        except (_RedisConnectionError, _RedisTimeoutError) as exc:
            raise RedisConnectionLost(
                f"connection to Redis failed while creating {name!r} ({exc}); the filter may "
                f"be left incomplete: RedisBloomFilter.delete_named(client, {name!r}) removes "
                "it"
            ) from exc
        return obj

    @classmethod
    def open(
        cls,
        client: Any,
        name: str,
        *,
        secret: bytes | None = None,
        key: Any = None,
        capacity: int | None = None,
        error_rate: float | None = None,
        layout: str | None = None,
        seed: int | None = None,
        shards: int | None = None,
    ) -> RedisBloomFilter:
        """Attach to the existing filter ``name``.

        The optional ``capacity``/``error_rate``/``layout``/``seed``/``shards``
        are checked against what is stored (:class:`FilterMismatchError`);
        ``secret`` must be the one the filter was created with.
        """
        meta = read_meta(client, name, "bloom", cls.__name__, secret,
                          formats=(REDIS_FORMAT, REDIS_FORMAT_BLOCKED_V1), noun="filter")
        name = check_name(name)
        fmt = meta["format"]
        try:
            if meta["layout"] not in cls._layouts:
                raise ValueError(meta["layout"])
            for f in ("num_bits", "num_hashes", "capacity", "seed", "key_check", "shards",
                      "shard_bytes", "payload_len"):
                int(meta[f])
            float.fromhex(meta["error_rate"])
            _ = meta["gen"], meta["keyed"]
            # the blocked layout version goes with the format's major
            want = "1" if fmt == REDIS_FORMAT_BLOCKED_V1 else None
            if meta.get("layout_version") not in ({want} if want else {None, "0"}) or (
                want and meta["layout"] != "blocked"
            ):
                raise ValueError(f"layout_version {meta.get('layout_version')!r} with {fmt!r}")
        except (KeyError, ValueError) as exc:
            raise FilterMismatchError(f"filter {name!r} has damaged metadata ({exc!r})") from exc
        expect_params(name, meta, capacity, error_rate, layout, seed, shards)
        obj = cls(client, name, meta, secret, key)
        if secret is not None:
            tiny = obj._cls.with_size(512, 1, seed=obj.seed, secret=secret)
            if _core.peek_header(tiny.to_bytes())["key_check"] != obj._key_check:
                raise FilterMismatchError(f"wrong secret for filter {name!r}")
        obj._check_shards()
        return obj

    @classmethod
    def open_or_create(
        cls,
        client: Any,
        name: str,
        capacity: int,
        error_rate: float = 0.01,
        *,
        layout: str = "classic",
        seed: int = 0,
        shards: int = 1,
        secret: bytes | None = None,
        key: Any = None,
    ) -> RedisBloomFilter:
        """Open ``name`` if it exists with these parameters, else create it (race-safe)."""
        for _ in range(2):
            try:
                return cls.open(client, name, secret=secret, key=key, capacity=capacity,
                                error_rate=error_rate, layout=layout, seed=seed, shards=shards)
            except FilterNotFoundError:
                pass
            try:
                return cls.create(client, name, capacity, error_rate, layout=layout,
                                  seed=seed, shards=shards, secret=secret, key=key)
            except FilterExistsError:
                pass  # another process created it first: open it
        return cls.open(client, name, secret=secret, key=key, capacity=capacity,
                        error_rate=error_rate, layout=layout, seed=seed, shards=shards)

    def _check_shards(self) -> None:
        pipe = self.client.pipeline(transaction=False)
        for s in range(self.shards):
            pipe.strlen(self._bits_keys[s])
            pipe.hget(self._hash_keys[s], "gen")
        try:
            res = pipe.execute()
        except (_RedisConnectionError, _RedisTimeoutError) as exc:
            raise wrap_connection_error(exc, f"open({self.name!r})") from exc
        for s in range(self.shards):
            length, gen = res[2 * s], res[2 * s + 1]
            if length != self._lens[s] or gen is None or as_text(gen) != self._gen:
                raise FilterMismatchError(
                    f"filter {self.name!r}: shard {s} ({self._bits_keys[s]!r}) is missing, "
                    f"of the wrong size ({length} bytes, expected {self._lens[s]}) or from "
                    "another creation: the filter is damaged"
                )

    @staticmethod
    def delete_named(client: Any, name: str) -> bool:
        """Delete the filter ``name`` (complete or not); True if it existed."""
        name = check_name(name)
        meta_key = meta_key_of(name)
        raw = client.hget(meta_key, "shards")
        shards = int(raw) if raw is not None and as_text(raw).isdigit() else 1
        existed = bool(client.delete(meta_key))  # first: new opens fail from here on
        bits, hashes = shard_key_names(name, max(1, shards))
        pipe = client.pipeline(transaction=False)
        for b, h in zip(bits, hashes, strict=True):
            pipe.delete(b)  # one key per DEL: cluster pipelines refuse multi-key DEL
            pipe.delete(h)
        existed = any(pipe.execute()) or existed
        return existed

    def delete(self) -> bool:
        """Delete the filter from Redis (meta first, then every shard)."""
        return self.delete_named(self.client, self.name)

    def clear(self) -> None:
        """Remove every key: each shard emptied by one atomic script (the local
        classes' ``clear``; issue #31 item 12).  Other handles keep working on
        the emptied filter; adds racing with it land before or after their
        shard's clear.  A filter deleted or re-created under this handle
        raises FilterNotFoundError and is not brought back."""
        for s in range(self.shards):
            try:
                CLEAR_SHARD.run(self.client, [self._bits_keys[s], self._hash_keys[s]],
                                [self._gen, self._lens[s]])
            except (_RedisConnectionError, _RedisTimeoutError) as exc:
                raise wrap_connection_error(exc, "clear") from exc
            except ResponseError as exc:
                raise map_response_error(exc, self.name) from exc

    def copy(self, name: str, *, replace: bool = False) -> RedisBloomFilter:
        """A new Redis filter ``name`` with this one's state, copied on the
        server by one script (every shard at one instant; redis/_admin.py);
        ``FilterExistsError`` if ``name`` exists, unless ``replace=True``.
        Returns a handle on the copy (the same secret and key function)."""
        (dst_bits, dst_hashes) = shard_key_names(check_name(name), self.shards)
        copy_structure(self, name, replace,
                       list(zip(self._bits_keys, dst_bits, self._lens, strict=True)),
                       list(zip(self._hash_keys, dst_hashes, strict=True)))
        return type(self).open(self.client, name, secret=self._secret, key=self._keyfunc)

    __copy__ = refuse_shallow_copy

    # ---- keys ---------------------------------------------------------------------

    def shard_of(self, key: object) -> int:
        """The shard holding ``key``'s bits: its first position // (8 * shard_bytes)."""
        return int(self._proto._bit_positions(key)[0]) // self._shard_bits

    @property
    def shard_keys(self) -> list[str]:
        """The Redis keys of the bit strings, shard 0 first."""
        return list(self._bits_keys)

    def _calls(self, script: Script, chunk: list[object]) -> list[tuple[int, list[int],
                                                                           list[Any]]]:
        """One (shard, key indices, EVALSHA args) per shard the chunk touches."""
        pos = self._proto._bit_positions
        k = self.num_hashes
        if self.shards == 1:
            flat: list[int] = []
            for key in chunk:
                flat += pos(key)
            return [(0, list(range(len(chunk))), self._argv(script, 0, flat, k))]
        per: list[list[int]] = [[] for _ in range(self.shards)]
        idx: list[list[int]] = [[] for _ in range(self.shards)]
        sb = self._shard_bits
        for i, key in enumerate(chunk):
            p = pos(key)
            s = p[0] // sb
            per[s] += p
            idx[s].append(i)
        return [
            (s, idx[s], self._argv(script, s, per[s], k))
            for s in range(self.shards)
            if idx[s]
        ]

    def _argv(self, script: Script, s: int, flat: list[int], k: int) -> list[Any]:
        base = s * self._shard_bits
        if base:
            text = " ".join([str((p - base) ^ 7) for p in flat])
        else:
            text = " ".join([str(p ^ 7) for p in flat])
        return script.args(
            [self._bits_keys[s], self._hash_keys[s]], [self._gen, self._lens[s], k, text]
        )

    def _execute(self, calls: list[list[Any]], what: str, confirmed: int | None
                 ) -> list[bytes]:
        """Run EVALSHA calls in one pipeline; NOSCRIPT ones again with EVAL."""
        pipe = self.client.pipeline(transaction=False)
        for args in calls:
            pipe.execute_command("EVALSHA", *args)
        try:
            res = pipe.execute(raise_on_error=False)
            return settle_replies(
                calls, res,
                lambda args: self.client.execute_command("EVAL", SCRIPTS[args[0]], *args[1:]),
                self.name)
        except (_RedisConnectionError, _RedisTimeoutError) as exc:
            raise wrap_connection_error(exc, what, confirmed) from exc

    # ---- membership ---------------------------------------------------------------

    def add(self, key: object) -> bool:
        """Add ``key``; True if it was new (some of its bits were 0).  One atomic call."""
        (_, _, args), = self._calls(self._add_script, [key])
        return self._execute([args], "add", 0)[0] == b"1"

    def __contains__(self, key: object) -> bool:
        (_, _, args), = self._calls(self._contains_script, [key])
        return self._execute([args], "contains", None)[0] == b"1"

    def contains(self, key: object) -> bool:
        """``key in self``."""
        return key in self

    def _batches(self, script: Script, keys: Iterable[object]
                 ) -> Iterator[tuple[int, list[tuple[list[int], bytes]]]]:
        """(keys in the round trip, [(indices, reply)]) per pipelined round trip."""
        depth = max(1, self.pipeline_depth)
        pending: list[tuple[int, list[int], list[Any]]] = []
        nkeys = 0
        base = 0
        what = "add_many" if script is self._add_script else "contains_many"
        confirmed = 0

        def flush() -> list[tuple[list[int], bytes]]:
            res = self._execute([a for _, _, a in pending], what,
                                confirmed if script is self._add_script else None)
            return [(ix, r) for (_, ix, _), r in zip(pending, res, strict=True)]

        chunks = 0
        for chunk in chunked(keys, max(1, self.chunk_size)):
            for s, ix, args in self._calls(script, chunk):
                pending.append((s, [base + i for i in ix], args))
            base += len(chunk)
            nkeys += len(chunk)
            chunks += 1
            if chunks >= depth:
                yield nkeys, flush()
                confirmed += nkeys
                pending, nkeys, chunks = [], 0, 0
        if pending:
            yield nkeys, flush()

    def add_many(self, keys: Iterable[object]) -> int:
        """Add every key (chunked, pipelined); returns how many were new.

        Each chunk (per shard) is one atomic script call.  On a plain
        ``redis.Redis`` client the calls are packed by hand and the next
        round trip is sent before the replies of the previous one are read
        (see docs/redis.md, "Throughput"); on a cluster client they go
        through redis-py pipelines.
        """
        new = 0
        if self._raw_ok():
            for replies in self._raw_pipeline(self._add_trips(keys), self._send_evalsha,
                                              self._read_evalsha, "add_many"):
                for r in replies:
                    new += r.count(b"1")
            return new
        for _, replies in self._batches(self._add_script, keys):
            for _, r in replies:
                new += r.count(b"1")
        return new

    def _add_trips(self, keys: Iterable[object]) -> Iterator[tuple[list[list[Any]], int]]:
        """(EVALSHA argument lists, keys) per round trip of pipeline_depth chunks."""
        depth = max(1, self.pipeline_depth)
        calls: list[list[Any]] = []
        nkeys = chunks = 0
        for chunk in chunked(keys, max(1, self.chunk_size)):
            calls += [args for _, _, args in self._calls(self._add_script, chunk)]
            nkeys += len(chunk)
            chunks += 1
            if chunks >= depth:
                yield calls, nkeys
                calls, nkeys, chunks = [], 0, 0
        if calls:
            yield calls, nkeys

    @staticmethod
    def _send_evalsha(conn: Any, calls: list[list[Any]], check: bool) -> None:
        conn.send_packed_command([b"".join([resp_encode("EVALSHA", a) for a in calls])],
                                 check_health=check)

    def _read_evalsha(self, conn: Any, reader: RawReader, calls: list[list[Any]],
                      inflight: deque[Any]) -> tuple[list[bytes], int]:
        """The replies of one trip of script calls; NOSCRIPT ones run again with
        EVAL once every trip in flight is read (they then count as this trip's)."""
        out: list[bytes] = []
        retry: list[list[Any]] = []
        drained = 0

        def take(batch: list[list[Any]]) -> None:
            for args in batch:
                r = reader.reply()
                if isinstance(r, ErrorReply):
                    if r.text.startswith("NOSCRIPT"):
                        retry.append(args)
                        continue
                    raise map_response_error(ResponseError(r.text), self.name)
                out.append(r)

        take(calls)
        if retry:
            while inflight:  # their replies come first on this connection
                more, n = inflight.popleft()
                take(more)
                drained += n
            again, retry[:] = list(retry), []
            conn.send_packed_command(
                [b"".join([resp_encode("EVAL", [SCRIPTS[a[0]], *a[1:]]) for a in again])],
                check_health=False)
            take(again)
            if retry:
                raise RedisFilterError("Redis answered NOSCRIPT to EVAL")
        return out, drained

    def update(self, *iterables: Iterable[object]) -> None:
        """Add the keys of every iterable."""
        for it in iterables:
            self.add_many(it)

    def contains_many(self, keys: Iterable[object]) -> list[bool]:
        """Membership of every key, in order (chunked, pipelined).

        On a plain ``redis.Redis`` client: one hand-packed ``GETRANGE`` of
        the key's block (blocked) or ``BITFIELD_RO`` (classic) per key,
        ``chunk_size * pipeline_depth`` keys per round trip, replies parsed
        from the raw bytes (see docs/redis.md, "Throughput").  On a cluster
        client: one script call per chunk and shard.
        """
        if self._raw_ok():
            return self._contains_raw(keys)
        return self._contains_scripted(keys)

    def _raw_ok(self) -> bool:
        return self.raw_protocol and not self._cluster and hasattr(self.client,
                                                                   "connection_pool")

    def _contains_scripted(self, keys: Iterable[object]) -> list[bool]:
        out: list[bool] = []
        for n, replies in self._batches(self._contains_script, keys):
            out.extend([False] * n)
            for ix, r in replies:
                for i, c in zip(ix, r, strict=True):
                    out[i] = c == 49  # b"1"
        return out

    # ---- whole-filter operations --------------------------------------------------

    def _stale(self) -> FilterNotFoundError:
        return FilterNotFoundError(
            f"Redis filter {self.name!r} was deleted or replaced while this handle was open; "
            "open it again"
        )

    def _check_gen(self, gen: Any) -> None:
        """Raise FilterNotFoundError unless a shard's ``gen`` is this handle's."""
        if gen is None or as_text(gen) != self._gen:
            raise self._stale()

    def _shard_counts(self) -> list[tuple[int, int]]:
        # gen in the same HMGET as the counters: one atomic read per shard,
        # so a deleted or re-created filter's counters are never reported.
        pipe = self.client.pipeline(transaction=False)
        for h in self._hash_keys:
            pipe.hmget(h, "gen", "adds", "base")
        rows = pipe.execute()
        for gen, _, _ in rows:
            self._check_gen(gen)
        return [(int(a or 0), int(b or 0)) for _, a, b in rows]

    def _count(self, counts: list[tuple[int, int]]) -> int:
        adds = sum(a for a, _ in counts)
        base = sum(b for _, b in counts)
        return union_count(self.num_bits, self.num_hashes, base,
                            self.layout == "blocked") + adds

    def __len__(self) -> int:
        """The count ``to_local()`` would store (see docs/redis.md)."""
        return self._count(self._shard_counts())

    def bits_set(self) -> int:
        """Number of bits set (BITCOUNT over the shards)."""
        # Each shard's BITCOUNT between two reads of its gen, in order on one
        # connection: equal to this handle's both times, the count is of this
        # creation (a delete, or a delete and create, in between changes gen;
        # gens are random and never reused).  No MULTI: cluster pipelines of
        # redis-py < 6 refuse transactions.
        pipe = self.client.pipeline(transaction=False)
        for b, h in zip(self._bits_keys, self._hash_keys, strict=True):
            pipe.hget(h, "gen")
            pipe.bitcount(b)
            pipe.hget(h, "gen")
        res = pipe.execute()
        for s in range(self.shards):
            self._check_gen(res[3 * s])
            self._check_gen(res[3 * s + 2])
        return sum(int(res[3 * s + 1]) for s in range(self.shards))

    def __repr__(self) -> str:
        shards = f", shards={self.shards}" if self.shards > 1 else ""
        keyed = ", keyed" if self.keyed else ""
        return (
            f"RedisBloomFilter(name={self.name!r}, layout={self.layout!r}, "
            f"capacity={self.capacity}, error_rate={self.error_rate:g}, "
            f"num_bits={self.num_bits}, num_hashes={self.num_hashes}, seed={self.seed}"
            f"{shards}{keyed})"
        )

