"""Counter structures in Redis: RedisCountingBloomFilter and RedisCountMinSketch.

Same principle as RedisBloomFilter, unsharded: one string {name}:ctr holding
the counters, one hash {name}:n holding gen and the header counters, the meta
hash {name}:meta.  Positions come from an empty local structure of the same
shape; Redis sees counter offsets only.  Counter widths and byte order:

  counting u4: the local bytes as they are; our counter i is Redis `u4 #(i^1)`.
  counting u8: the local bytes as they are; counter i is `u8 #i`.
  counting u16, CMS u32: Redis BITFIELD integers are big-endian, the local
      format little-endian, so the Redis string holds every counter in
      BIG-endian order (counter i is `u16 #i` / `u32 #i`) and to_local /
      merge_from swap the bytes of each counter.

Every script (_scripts.py) checks gen and the exact length first (BKGONE),
then does its first write only once it can no longer fail, so a refused call
changes nothing.
"""

from __future__ import annotations

import re
import secrets as _secrets
import struct
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

from redis.exceptions import ConnectionError as _RedisConnectionError
from redis.exceptions import NoScriptError, ResponseError
from redis.exceptions import TimeoutError as _RedisTimeoutError

from .. import _core
from ..counting import CountingBloomFilter
from ..errors import CapacityError, IncompatibleFiltersError
from ..sketch import CountMinSketch
from ._admin import clear_state, copy_structure, refuse_shallow_copy
from ._layout import (
    MAX_STRING_BYTES,
    PIECE,
    REDIS_FORMAT,
    MetaHandle,
    as_text,
    check_client,
    check_name,
    meta_key_of,
    read_meta,
    union_count,
)
from ._scripts import (
    CB_ADD,
    CB_REMOVE,
    CLAIM_SCRIPT,
    CMS_ADD,
    INIT_CTR,
    MERGE_CTR,
    MIN_SCRIPT,
    Script,
)
from ._wire import (
    chunked,
    chunked_flat,
    map_response_error,
    state_int,
    wrap_connection_error,
)
from .errors import (
    FilterExistsError,
    FilterMismatchError,
    FilterNotFoundError,
    RedisConnectionLost,
)

__all__ = ["RedisCountMinSketch", "RedisCountingBloomFilter"]

_MAX_I64 = 2**63 - 1


def _swap_counters(data: bytes | bytearray | memoryview, width: int) -> bytes:
    """Reverse the bytes of every width-byte counter (LE <-> BE)."""
    b = bytes(data)
    if width == 1:
        return b
    out = bytearray(len(b))
    for r in range(width):
        out[r::width] = b[width - 1 - r::width]
    return bytes(out)


class _RedisCounters(MetaHandle):
    """Shared machinery of RedisCountingBloomFilter and RedisCountMinSketch."""

    _structure: ClassVar[str] = ""
    _local_cls: ClassVar[type[Any]]
    _hash_fields: ClassVar[tuple[str, ...]] = ()
    _signed_fields: ClassVar[tuple[str, ...]] = ()  # state fields that may be below 0
    _hash_reset: ClassVar[tuple[str, ...]] = ()  # the state fields create sets to 0
    chunk_size: int = 1000

    def __init__(self, client: Any, name: str, meta: dict[str, str], secret: bytes | None,
                 key: Any) -> None:
        """Use :meth:`create` or :meth:`open`."""
        super().__init__(client, name, meta, secret, key)
        self._meta = meta
        self._proto: Any = self._make_proto(meta, secret, key)
        self._ctr_key = f"{{{name}}}:ctr"
        self._hash_key = f"{{{name}}}:n"
        self._k = len(self._proto._counter_positions(b""))

    # subclass hooks
    def _make_proto(self, meta: dict[str, str], secret: bytes | None, key: Any) -> Any:
        raise NotImplementedError

    @property
    def _type(self) -> str:
        raise NotImplementedError

    @property
    def _width(self) -> int:
        raise NotImplementedError

    def _offset(self, i: int) -> str:
        return f"#{i}"

    # ---- lifecycle -------------------------------------------------------------------

    @classmethod
    def _create(cls, client: Any, name: str, meta: dict[str, str], secret: bytes | None,
                key: Any, init: list[Any]) -> Any:
        check_client(client)
        name = check_name(name)
        meta = {"format": REDIS_FORMAT, "structure": cls._structure, **meta,
                "gen": _secrets.token_hex(8), "state": "creating"}
        obj = cls(client, name, meta, secret, key)
        if obj.payload_len > MAX_STRING_BYTES:
            raise CapacityError(
                f"the {cls._structure} state needs {obj.payload_len:,} bytes, over the "
                "512 MiB Redis string limit (this structure is not sharded)"
            )
        tiny = obj._proto.to_bytes()
        meta["key_check"] = str(_core.peek_header(tiny)["key_check"])
        obj._key_check = int(meta["key_check"])
        meta_key = meta_key_of(name)
        flat = [x for kv in meta.items() for x in kv]
        try:
            if not CLAIM_SCRIPT.run(client, [meta_key], flat):
                raise FilterExistsError(f"a Redis key {meta_key!r} already exists: "
                                        f"{name!r} exists (open it, or delete it first)")
            INIT_CTR.run(client, [obj._ctr_key, obj._hash_key],
                          [obj._gen, obj.payload_len, *init])
            client.hset(meta_key, "state", "ready")
        except (_RedisConnectionError, _RedisTimeoutError) as exc:
            raise RedisConnectionLost(
                f"connection to Redis failed while creating {name!r} ({exc}); it may be left "
                f"incomplete: {cls.__name__}.delete_named(client, {name!r}) removes it"
            ) from exc
        return obj

    @classmethod
    def _open_meta(cls, client: Any, name: str, secret: bytes | None) -> dict[str, str]:
        return read_meta(client, name, cls._structure, cls.__name__, secret)

    @classmethod
    def _open_obj(cls, client: Any, name: str, meta: dict[str, str], secret: bytes | None,
                  key: Any) -> Any:
        try:
            obj = cls(client, name, meta, secret, key)
        except (KeyError, ValueError, TypeError) as exc:
            raise FilterMismatchError(f"{name!r} has damaged metadata ({exc!r})") from exc
        if secret is not None:
            mine = _core.peek_header(obj._proto.to_bytes())["key_check"]
            if mine != obj._key_check:
                raise FilterMismatchError(f"wrong secret for {name!r}")
        try:
            length = client.strlen(obj._ctr_key)
            gen = client.hget(obj._hash_key, "gen")
        except (_RedisConnectionError, _RedisTimeoutError) as exc:
            raise wrap_connection_error(exc, f"open({name!r})") from exc
        obj._check_payload(obj._ctr_key, length, gen)
        return obj

    @classmethod
    def delete_named(cls, client: Any, name: str) -> bool:
        """Delete ``name`` (complete or not); True if it existed."""
        name = check_name(name)
        existed = bool(client.delete(meta_key_of(name)))  # first: new opens fail from here on
        pipe = client.pipeline(transaction=False)
        pipe.delete(f"{{{name}}}:ctr")
        pipe.delete(f"{{{name}}}:n")
        return any(pipe.execute()) or existed

    def delete(self) -> bool:
        """Delete it from Redis (meta first, then the counters)."""
        return self.delete_named(self.client, self.name)

    def clear(self) -> None:
        """Zero every counter and the header counters, atomically (one
        script; the local ``clear``).  Other handles keep working on the
        emptied structure; one deleted or re-created under this handle
        raises FilterNotFoundError and is not brought back."""
        clear_state(self, self._ctr_key, self._hash_key, self.payload_len,
                    [x for f in self._hash_reset for x in (f, 0)])

    def copy(self, name: str, *, replace: bool = False) -> Any:
        """A new Redis structure ``name`` with this one's state, copied on the
        server by one script (redis/_admin.py); ``FilterExistsError`` if
        ``name`` exists, unless ``replace=True``.  Returns a handle on it."""
        dst = check_name(name)
        copy_structure(self, dst, replace,
                       [(self._ctr_key, f"{{{dst}}}:ctr", self.payload_len)],
                       [(self._hash_key, f"{{{dst}}}:n")])
        meta = self._open_meta(self.client, dst, self._secret)
        return self._open_obj(self.client, dst, meta, self._secret, self._keyfunc)

    __copy__ = refuse_shallow_copy

    # ---- calls -----------------------------------------------------------------------

    def _offsets(self, keys: list[object]) -> str:
        pos = self._proto._counter_positions
        off = self._offset
        return " ".join([off(i) for key in keys for i in pos(key)])

    def _argv(self, *extra: Any) -> list[Any]:
        return [self._gen, self.payload_len, self._k, self._type, *extra]

    def _keys(self) -> list[str]:
        return [self._ctr_key, self._hash_key]

    def _run(self, script: Script, argv: list[Any], what: str, confirmed: int = 0) -> Any:
        return self._run_many(script, [argv], what, confirmed)[0]

    def _run_many(self, script: Script, argvs: list[list[Any]], what: str,
                  confirmed: int = 0) -> list[Any]:
        keys = self._keys()
        pipe = self.client.pipeline(transaction=False)
        for argv in argvs:
            pipe.execute_command("EVALSHA", *script.args(keys, argv))
        try:
            res = pipe.execute(raise_on_error=False)
            out = []
            for argv, r in zip(argvs, res, strict=True):
                if isinstance(r, NoScriptError):
                    r = self.client.execute_command("EVAL", script.body, len(keys), *keys,
                                                    *argv)
                if isinstance(r, ResponseError):
                    raise self._map_error(r)
                if isinstance(r, Exception):
                    raise r
                out.append(r)
            return out
        except ResponseError as exc:
            raise self._map_error(exc) from exc
        except (_RedisConnectionError, _RedisTimeoutError) as exc:
            if script is MIN_SCRIPT:  # count/contains/estimate: nothing written
                raise wrap_connection_error(exc, what) from exc
            raise RedisConnectionLost(
                f"connection to Redis failed during {what} ({type(exc).__name__}: {exc}); "
                f"{confirmed} keys were confirmed; every other key was either fully applied "
                "or not at all (one atomic script call per chunk). Counting adds, removes "
                "and count-min adds are NOT idempotent: check the state before retrying",
                confirmed,
            ) from exc

    def _map_error(self, exc: ResponseError) -> Exception:
        text = str(exc)
        if "BKOVERFLOW" in text:
            return OverflowError(f"{self.name!r}: {text.split('BKOVERFLOW', 1)[1].strip()} "
                                 "(Redis hash integers are signed 64-bit); nothing changed")
        return map_response_error(exc, self.name)

    def _batched(self, script: Script, keys: Iterable[object], what: str,
                 make: Any) -> Iterator[tuple[list[object], Any]]:
        depth = max(1, self.pipeline_depth)
        chunks: list[list[object]] = []
        confirmed = 0
        for chunk in chunked(keys, max(1, self.chunk_size)):
            chunks.append(chunk)
            if len(chunks) >= depth:
                res = self._run_many(script, [make(c) for c in chunks], what, confirmed)
                yield from zip(chunks, res, strict=True)
                confirmed += sum(len(c) for c in chunks)
                chunks = []
        if chunks:
            res = self._run_many(script, [make(c) for c in chunks], what, confirmed)
            yield from zip(chunks, res, strict=True)

    def _mins(self, keys: Iterable[object], what: str) -> list[int]:
        out: list[int] = []
        for _, r in self._batched(MIN_SCRIPT, keys, what, lambda c: self._argv(self._offsets(c))):
            out += [int(x) for x in r]
        return out

    def _hash_field(self, field: str) -> int:
        """One header counter, read with ``gen`` in one HMGET (atomic): a handle
        whose structure was deleted or re-created raises FilterNotFoundError."""
        gen, value = self.client.hmget(self._hash_key, "gen", field)
        if gen is None or as_text(gen) != self._gen:
            raise FilterNotFoundError(
                f"Redis structure {self.name!r} was deleted or replaced while this handle was "
                "open"
            )
        return state_int(value or 0, field, self.name)

    def _read(self) -> tuple[bytes, list[Any]]:
        """The counters string and the hash fields, read in one MULTI."""
        pipe = self.client.pipeline(transaction=True)
        for off in range(0, self.payload_len, PIECE):
            pipe.getrange(self._ctr_key, off, min(off + PIECE, self.payload_len) - 1)
        pipe.hmget(self._hash_key, "gen", *self._hash_fields)
        try:
            res = pipe.execute()
        except (_RedisConnectionError, _RedisTimeoutError) as exc:
            raise wrap_connection_error(exc, "to_local") from exc
        fields = res[-1]
        data = b"".join(res[:-1])
        if fields[0] is None or as_text(fields[0]) != self._gen or len(data) != self.payload_len:
            raise FilterNotFoundError(
                f"Redis structure {self.name!r} was deleted or replaced while this handle was "
                "open"
            )
        return data, [state_int(v or 0, f, self.name, signed=f in self._signed_fields)
                      for f, v in zip(self._hash_fields, fields[1:], strict=True)]

    def _build_local(self, payload: bytes, patches: list[tuple[int, int]]) -> Any:
        data = bytearray(self._proto.to_bytes())
        header_len = _core.peek_header(data)["header_len"]
        data[header_len:] = payload
        for off, value in patches:
            struct.pack_into("<Q", data, off, value)
        # the server's adds never see a key's type: the key domains are
        # unknown (docs/redis.md), not the prototype's empty record
        _core.set_key_domains(data, -1)
        _core.seal(data)
        return self._local_cls.from_bytes(bytes(data), self._secret, self._keyfunc)

    def _local_payload(self, local: Any) -> tuple[bytes, bytes]:
        """(the local's full state, its payload in the Redis byte order)."""
        if type(local) is not self._local_cls:
            raise IncompatibleFiltersError(
                f"cannot merge a {type(local).__name__} into a {type(self).__name__} "
                f"(needs a {self._local_cls.__name__})"
            )
        data = local.to_bytes()
        if _core.peek_header(data)["key_check"] != self._key_check:
            raise IncompatibleFiltersError("keyed with a different secret (or not keyed)")
        header_len = _core.peek_header(data)["header_len"]
        return data, _swap_counters(memoryview(data)[header_len:], self._width)

    def _nonzero_pairs(self, redis_payload: bytes) -> str:
        """'offset value' pairs of the nonzero counters, in Redis byte order."""
        w = self._width
        parts: list[str] = []
        if self._type == "u4":
            for m in re.finditer(b"[^\\x00]", redis_payload, re.DOTALL):
                i = m.start()
                b = redis_payload[i]
                if b & 15:
                    parts.append(f"#{(2 * i) ^ 1} {b & 15}")  # low nibble: our counter 2i
                if b >> 4:
                    parts.append(f"#{2 * i} {b >> 4}")
            return " ".join(parts)
        seen = -1
        for m in re.finditer(b"[^\\x00]", redis_payload, re.DOTALL):
            c = m.start() // w
            if c == seen:
                continue
            seen = c
            v = int.from_bytes(redis_payload[c * w:(c + 1) * w], "big")
            parts.append(f"#{c} {v}")
        return " ".join(parts)


class RedisCountingBloomFilter(_RedisCounters):
    """A counting Bloom filter whose counters live in Redis.

    Same hashing, sizing and semantics as :class:`bloomkit.CountingBloomFilter`
    with ``layout="classic"`` (its counters are Redis bitfields at the classic
    probe positions; a blocked local filter does not merge in): saturating
    counters, a saturated counter is never decremented, removing
    a surely-absent key raises KeyError and changes nothing;
    :meth:`to_local` is byte-identical to the local filter after the same
    operations in the order the server ran them.  See docs/redis.md.
    """

    _structure = "counting"
    _local_cls = CountingBloomFilter
    _hash_fields = ("count", "base", "dc", "dd")
    _signed_fields = ("dd",)  # new distinct keys minus those zeroed since the last merge
    _hash_reset = ("count", "nz", "base", "dc", "dd")

    def _make_proto(self, meta: dict[str, str], secret: bytes | None, key: Any) -> Any:
        self.capacity = int(meta["capacity"])
        self.error_rate = float.fromhex(meta["error_rate"])
        self.counter_bits = int(meta["counter_bits"])
        # The classic layout: Redis keeps the counters of every file it has
        # written, and to_local() rebuilds exactly that local filter.
        proto = CountingBloomFilter(self.capacity, self.error_rate,
                                    counter_bits=self.counter_bits, layout="classic",
                                    seed=self.seed, secret=secret, key=key)
        self.num_counters = int(proto.num_counters)
        self.num_hashes = int(proto.num_hashes)
        self.counter_max = int(proto.counter_max)
        if proto.nbytes != int(meta["payload_len"]):
            raise ValueError("payload_len does not match the parameters")
        return proto

    @property
    def _type(self) -> str:
        return f"u{self.counter_bits}"

    @property
    def _width(self) -> int:
        return 2 if self.counter_bits == 16 else 1

    def _offset(self, i: int) -> str:
        return f"#{i ^ 1}" if self.counter_bits == 4 else f"#{i}"

    @classmethod
    def create(cls, client: Any, name: str, capacity: int, error_rate: float = 0.01, *,
               counter_bits: int = 4, seed: int = 0, secret: bytes | None = None,
               key: Any = None) -> RedisCountingBloomFilter:
        """Create a new shared counting filter; an existing name is an error."""
        local = CountingBloomFilter(capacity, error_rate, counter_bits=counter_bits,
                                    layout="classic", seed=seed, secret=secret, key=key)
        meta = {
            "capacity": str(local.capacity), "error_rate": float(local.error_rate).hex(),
            "counter_bits": str(counter_bits), "seed": str(local.seed),
            "keyed": "1" if secret is not None else "0", "key_check": "0",
            "payload_len": str(local.nbytes),
        }
        obj: RedisCountingBloomFilter = cls._create(
            client, name, meta, secret, key,
            [x for f in cls._hash_reset for x in (f, 0)])
        return obj

    @classmethod
    def open(cls, client: Any, name: str, *, secret: bytes | None = None,
             key: Any = None) -> RedisCountingBloomFilter:
        """Attach to the existing counting filter ``name``."""
        meta = cls._open_meta(client, name, secret)
        obj: RedisCountingBloomFilter = cls._open_obj(client, name, meta, secret, key)
        return obj

    def add(self, key: object) -> bool:
        """Increment the key's counters; True if one was 0.  One atomic command."""
        return bool(self._run(CB_ADD, self._argv(self._offsets([key])), "add") == b"1")

    def add_many(self, keys: Iterable[object]) -> int:
        """Add every key (chunked, pipelined); returns how many were new."""
        new = 0
        for _, r in self._batched(CB_ADD, keys, "add_many",
                                  lambda c: self._argv(self._offsets(c))):
            new += r.count(b"1")
        return new

    def update(self, *iterables: Iterable[object]) -> None:
        """Add the keys of every iterable (the local ``update``)."""
        for it in iterables:
            self.add_many(it)

    def remove(self, key: object) -> None:
        """Decrement the key's counters; KeyError (and no change) if surely absent."""
        removed, _ = self._run(CB_REMOVE, self._argv(self.counter_max,
                                                      self._offsets([key])), "remove")
        if not removed:
            raise KeyError(key)

    def discard(self, key: object) -> bool:
        """remove() without the KeyError; True if removed."""
        removed, _ = self._run(CB_REMOVE, self._argv(self.counter_max,
                                                      self._offsets([key])), "discard")
        return bool(removed)

    def remove_many(self, keys: Iterable[object]) -> int:
        """Remove keys in order; KeyError at the first surely-absent one (the keys
        before it stay removed, it and the rest are untouched).  Chunks are sent
        one at a time, so nothing after a refused key runs."""
        total = 0
        for chunk in chunked(keys, max(1, self.chunk_size)):
            removed, stopped = self._run(
                CB_REMOVE, self._argv(self.counter_max, self._offsets(chunk)),
                "remove_many", total)
            total += int(removed)
            if stopped:
                raise KeyError(f"key at index {total} is surely absent; the {total} keys "
                               "before it were removed")
        return total

    def count(self, key: object) -> int:
        """The minimum of the key's counters (BITFIELD_RO)."""
        return self._mins([key], "count")[0]

    def __contains__(self, key: object) -> bool:
        return self.count(key) > 0

    def contains(self, key: object) -> bool:
        """``key in self``."""
        return key in self

    def contains_many(self, keys: Iterable[object]) -> list[bool]:
        """Membership of every key, in order (chunked, pipelined)."""
        return [m > 0 for m in self._mins(keys, "contains_many")]

    def count_many(self, keys: Iterable[object]) -> list[int]:
        """count() of every key, in order (chunked, pipelined)."""
        return self._mins(keys, "count_many")

    def __len__(self) -> int:
        """Keys held (adds minus successful removes), as the local filter counts."""
        return self._hash_field("count")

    def _distinct(self, base: int, dc: int, dd: int) -> int:
        return max(dc, union_count(self.num_counters, self.num_hashes, base) + dd)

    def to_local(self) -> Any:
        """A local CountingBloomFilter, byte-identical to the local build."""
        data, (count, base, dc, dd) = self._read()
        payload = _swap_counters(data, self._width)
        return self._build_local(payload, [(96, count), (104, self._distinct(base, dc, dd))])

    def merge_from(self, local: Any) -> None:
        """Add a local CountingBloomFilter of the same shape, counter by counter
        (saturating), atomically (one script)."""
        if type(local) is self._local_cls and local.layout != "classic":
            raise IncompatibleFiltersError(
                f"cannot merge a {local.layout}-layout CountingBloomFilter into Redis, whose "
                "counting filters have the classic layout (build it with layout='classic')"
            )
        if type(local) is self._local_cls and (
                local.num_counters, local.num_hashes, local.counter_bits, local.seed) != (
                self.num_counters, self.num_hashes, self.counter_bits, self.seed):
            raise IncompatibleFiltersError(
                "filters differ: (num_counters, num_hashes, counter_bits, seed) "
                f"{(local.num_counters, local.num_hashes, local.counter_bits, local.seed)} "
                f"!= {(self.num_counters, self.num_hashes, self.counter_bits, self.seed)}"
            )
        _, payload = self._local_payload(local)
        if len(local) > _MAX_I64:
            raise OverflowError("the local filter's count exceeds 2^63-1")
        self._run(MERGE_CTR, self._argv("count", len(local), self._nonzero_pairs(payload)),
                  "merge_from")

    def __repr__(self) -> str:
        return (f"RedisCountingBloomFilter(name={self.name!r}, capacity={self.capacity}, "
                f"error_rate={self.error_rate:g}, num_counters={self.num_counters}, "
                f"num_hashes={self.num_hashes}, counter_bits={self.counter_bits}, "
                f"seed={self.seed}{', keyed' if self.keyed else ''})")


class RedisCountMinSketch(_RedisCounters):
    """A count-min sketch whose counters live in Redis (u32 counters only).

    Same hashing and semantics as :class:`bloomkit.CountMinSketch`
    (saturating counters, optional conservative update, done inside the
    per-key script); :meth:`to_local` is byte-identical to the local sketch
    after the same adds in the server's order.  See docs/redis.md.
    """

    _structure = "cms"
    _local_cls = CountMinSketch
    _hash_fields = ("total",)
    _hash_reset = ("total",)

    def _make_proto(self, meta: dict[str, str], secret: bytes | None, key: Any) -> Any:
        self.width = int(meta["width"])
        self.depth = int(meta["depth"])
        self.conservative = meta["conservative"] == "1"
        self.counter_bits = 32
        # Sketches created before #16.5 have no "row_hash" in their meta: they
        # keep the double-hashed rows their counters were written with.
        self.row_hash = int(meta.get("row_hash", "0"))
        proto = CountMinSketch(self.width, self.depth, seed=self.seed, secret=secret, key=key,
                               conservative=self.conservative, counter_bits=32,
                               row_hash=self.row_hash)
        self.counter_max = int(proto.counter_max)
        if proto.nbytes != int(meta["payload_len"]):
            raise ValueError("payload_len does not match the parameters")
        return proto

    @property
    def _type(self) -> str:
        return "u32"

    @property
    def _width(self) -> int:
        return 4

    @classmethod
    def create(cls, client: Any, name: str, width: int, depth: int, *, seed: int = 0,
               conservative: bool = False, counter_bits: int = 32,
               secret: bytes | None = None, key: Any = None) -> RedisCountMinSketch:
        """Create a new shared sketch of ``depth`` rows of ``width`` u32 counters."""
        if counter_bits != 32:
            raise ValueError(
                "counter_bits must be 32 for a Redis sketch: BITFIELD has no unsigned "
                "64-bit type (u63 at most), so 64-bit saturation could not match the local "
                "CountMinSketch"
            )
        local = CountMinSketch(width, depth, seed=seed, secret=secret, key=key,
                               conservative=conservative, counter_bits=32)
        meta = {
            "width": str(local.width), "depth": str(local.depth),
            "conservative": "1" if conservative else "0", "seed": str(local.seed),
            "keyed": "1" if secret is not None else "0", "key_check": "0",
            "payload_len": str(local.nbytes), "row_hash": str(local.row_hash),
        }
        obj: RedisCountMinSketch = cls._create(client, name, meta, secret, key,
                                               [x for f in cls._hash_reset for x in (f, 0)])
        return obj

    @classmethod
    def open(cls, client: Any, name: str, *, secret: bytes | None = None,
             key: Any = None) -> RedisCountMinSketch:
        """Attach to the existing sketch ``name``."""
        meta = cls._open_meta(client, name, secret)
        obj: RedisCountMinSketch = cls._open_obj(client, name, meta, secret, key)
        return obj

    @staticmethod
    def _check_count(count: object) -> int:
        if isinstance(count, bool) or not isinstance(count, int):
            raise TypeError(f"count must be a non-negative int, not {type(count).__name__}")
        if count < 0:
            raise ValueError("count must be a non-negative int")
        if count > _MAX_I64:
            raise ValueError("count must be <= 2^63-1 in Redis (hash integers are signed)")
        return count

    def _add_argv(self, keys: list[object], counts: list[int]) -> list[Any]:
        pos = self._proto._counter_positions
        mx = self.counter_max
        text = " ".join([
            f"{min(c, mx)} " + " ".join([f"#{i}" for i in pos(key)])
            for key, c in zip(keys, counts, strict=True)
        ])
        total = sum(counts)
        if total > _MAX_I64:
            raise ValueError("the counts of one chunk sum past 2^63-1")
        return self._argv("1" if self.conservative else "0", mx, total, text)

    def add(self, key: object, count: int = 1) -> int:
        """Add ``count`` to the key; returns its new estimate.  One atomic command."""
        c = self._check_count(count)
        return int(self._run(CMS_ADD, self._add_argv([key], [c]), "add")[0])

    def add_many(self, keys: Iterable[object], counts: Iterable[int] | None = None) -> None:
        """Add every key (count 1, or the matching entry of ``counts``)."""
        if counts is None:
            pairs: Iterable[tuple[object, int]] = ((k, 1) for k in chunked_flat(keys))
        else:
            ks, cs = list(chunked_flat(keys)), [self._check_count(c) for c in counts]
            if len(ks) != len(cs):
                raise ValueError(f"keys and counts differ in length ({len(ks)} vs {len(cs)})")
            pairs = zip(ks, cs, strict=True)
        for _ in self._batched(CMS_ADD, pairs, "add_many",
                               lambda c: self._add_argv([k for k, _ in c],
                                                        [n for _, n in c])):
            pass

    def estimate(self, key: object) -> int:
        """The minimum of the key's d counters (>= its true count until saturation)."""
        return self._mins([key], "estimate")[0]

    def estimate_many(self, keys: Iterable[object]) -> list[int]:
        """estimate() of every key, in order (chunked, pipelined)."""
        return self._mins(keys, "estimate_many")

    def __contains__(self, key: object) -> bool:
        return self.estimate(key) > 0

    def contains(self, key: object) -> bool:
        """``key in self``: its estimate is above 0."""
        return key in self

    @property
    def total(self) -> int:
        """Sum of all counts added."""
        return self._hash_field("total")

    def to_local(self) -> Any:
        """A local CountMinSketch, byte-identical to the local build."""
        data, (total,) = self._read()
        return self._build_local(_swap_counters(data, 4), [(88, total)])

    def merge_from(self, local: Any) -> None:
        """Add a local sketch of the same shape counter by counter, saturating
        (like ``merge(..., saturate=True)``), atomically (one script)."""
        if type(local) is self._local_cls and (
                local.width, local.depth, local.counter_bits, local.seed, local.row_hash) != (
                self.width, self.depth, 32, self.seed, self.row_hash):
            raise IncompatibleFiltersError(
                "sketches differ: (width, depth, counter_bits, seed, row_hash) "
                f"{(local.width, local.depth, local.counter_bits, local.seed, local.row_hash)}"
                f" != {(self.width, self.depth, 32, self.seed, self.row_hash)}"
            )
        _, payload = self._local_payload(local)
        if local.total > _MAX_I64:
            raise OverflowError("the local sketch's total exceeds 2^63-1")
        self._run(MERGE_CTR, self._argv("total", local.total, self._nonzero_pairs(payload)),
                  "merge_from")

    def __repr__(self) -> str:
        return (f"RedisCountMinSketch(name={self.name!r}, width={self.width}, "
                f"depth={self.depth}, seed={self.seed}"
                f"{', conservative=True' if self.conservative else ''}"
                f"{', keyed' if self.keyed else ''})")
