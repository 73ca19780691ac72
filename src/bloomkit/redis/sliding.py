"""RedisSlidingBloomFilter: the age-partitioned Bloom filter of
:class:`bloomkit.SlidingBloomFilter`, shared through plain Redis (no module).

The algorithm is bk_sliding.h's, step for step (docs/sliding.md, "The exact
algorithm"), so :meth:`to_local` is a load of the same container bytes and
answers like the server:

- ``{name}:bits`` holds the local payload after its birth records, byte for
  byte (local bit ``i`` is Redis bit ``i ^ 7``, as for RedisBloomFilter):
  layout 1 ("blocked", new filters from 1e-4 up, as the local default) the
  m / 32 blocks of 128 bytes, a key's bit of every slice in one block;
  layout 0 the S = k + l slices of m bits in physical order.  A filter
  keeps its layout (``layout_version`` in the meta, ``layout`` in the
  state hash: both checked by every script and by to_local).
- ``{name}:n`` holds what the local header and birth records hold: the
  generation counter ``g`` and ring position ``r``, ``c``, ``inserted``,
  ``start`` and ``early`` (time mode), ``b<p>`` per slice.  Only scripts
  change them, so a shift (clear the oldest slice, advance the counter) is
  atomic, done by whichever client's script first finds the generation
  full or over.
- Time mode reads the server's ``TIME`` inside the script, never a client
  clock: the clocks of many machines disagree, the server's is one.
- The client computes each key's bit in every physical slice (it cannot
  know ``g``, another client may shift at any moment) and sends them
  (layout 0: S little-endian u32 Redis offsets per key; layout 1: the
  block's offset and a byte a lane, _scripts_sliding.py); the script picks
  the k youngest.  ``add_many`` is one script call per chunk, pipelined: a
  chunk is atomic on the server.  Layout 0 also keeps a copy of the frozen slices (age
  k and older: no add writes them again) and sends, per key, what they say
  of its query at the generation it expects, so the script sets the k bits
  in one BITFIELD and answers "was absent" without probing (_scripts_sliding.py,
  "Why hints"); a key in another generation takes the full query.
  ``contains_many`` reads an atomic snapshot of the whole filter (slices,
  state, ``TIME`` in one MULTI) and answers with the local C code when the
  filter is small next to the batch (about ``snapshot_bytes_per_key`` bytes
  a key), else one read-only script call per chunk.
"""

from __future__ import annotations

import importlib
import secrets as _secrets
import struct
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from redis.exceptions import ConnectionError as _RedisConnectionError
from redis.exceptions import TimeoutError as _RedisTimeoutError

from .. import _core, _descriptor
from .._batch import check_keys
from ..errors import CapacityError
from ._admin import clear_state, copy_structure, refuse_shallow_copy
from ._layout import (
    MAX_STRING_BYTES,
    PIECE,
    REDIS_FORMAT,
    MetaHandle,
    as_text,
    check_client,
    check_name,
    is_cluster,
    meta_key_of,
    read_meta,
    shard_key_names,
)
from ._scripts import CLAIM_SCRIPT, Script
from ._scripts_sliding import SLIDING_INIT, sliding_add_script, sliding_contains_script
from ._sliding_records import HAVE_NUMPY, SlidingRecords
from ._wire import chunked, settle_replies, state_int, wrap_connection_error
from .errors import (
    CorruptStateError,
    FilterExistsError,
    FilterMismatchError,
    FilterNotFoundError,
    RedisConnectionLost,
)

__all__ = ["RedisSlidingBloomFilter"]

_KIND_SLIDING: int = _core.KINDS["SlidingBloomFilter"].id  # the one list of kinds (bk_kinds.c)
_SLIDING = _core.KINDS["SlidingBloomFilter"]  # its descriptor: layout and lengths
HEADER_LEN: int = _SLIDING.header_len
_PARAMS_LEN: int = _SLIDING.params_len
_BIRTH_LEN = 16
_STATE_FIELDS = ("g", "c", "inserted", "start", "early")

def _sliding_module() -> Any:
    """bloomkit.sliding (imported by name: the Redis package does not need it
    to load), or ImportError naming what is missing."""
    try:
        return importlib.import_module("bloomkit.sliding")
    except ImportError as exc:
        raise ImportError(
            "RedisSlidingBloomFilter needs bloomkit.SlidingBloomFilter (the local filter it "
            "mirrors), which this build of bloomkit does not have"
        ) from exc


def _local_class() -> Any:
    return _sliding_module().SlidingBloomFilter


def _new_local(cls: Any, *args: Any, **kwargs: Any) -> Any:
    """The C type's constructor (k, l, m, capacity, error_rate, window_us,
    now, seed=, secret=, key=): a filter of a stored shape, not re-sized."""
    base: Any = _core
    return base.SlidingBase.__new__(cls, *args, **kwargs)


def _slices_len(layout_version: int, slices: int, slice_bits: int) -> int:
    """Bytes of the slices: S bit strings of m bits (0), or m / 32 blocks
    of 128 bytes (1: 4 m)."""
    return 4 * slice_bits if layout_version == 1 else slices * slice_bits // 8


def _births_len(slices: int) -> int:
    """BK_SLIDING_BIRTHS_LEN: 16 bytes a slice, rounded up to 64."""
    return (slices * _BIRTH_LEN + 63) & ~63


class RedisSlidingBloomFilter(SlidingRecords, MetaHandle):
    """Membership over a sliding window (the last ``capacity`` adds, or the
    last ``window`` seconds of the server's clock), shared through Redis.

    Create with :meth:`create`, attach with :meth:`open` (or
    :meth:`open_or_create`).  Same sizing, hashing (seed, ``secret=``,
    ``key=``) and algorithm as :class:`bloomkit.SlidingBloomFilter`;
    :meth:`to_local` returns one with the same answers.  See docs/redis.md,
    "Sliding window".
    """

    #: contains_many reads the whole filter (one MULTI) and answers locally
    #: when its slices are at most this many bytes per key of the call
    snapshot_bytes_per_key: int = 256
    #: add_many reads the frozen slices it lacks (to answer "was absent"
    #: itself: docs/redis.md, "Sliding window") while they cost at most this
    #: many bytes a key added through this handle; 0: never
    hint_bytes_per_key: int = 256

    def __init__(self, client: Any, name: str, meta: dict[str, str], secret: bytes | None,
                 key: Any) -> None:
        """Use :meth:`create` or :meth:`open`."""
        super().__init__(client, name, meta, secret, key)
        self.num_hashes = int(meta["k"])
        self.generations = int(meta["l"])
        self.slice_bits = int(meta["slice_bits"])
        self.capacity = int(meta["capacity"])
        self.error_rate = float.fromhex(meta["error_rate"])
        self.window_us = int(meta["window_us"])
        #: 1: every slice's bit of a key in one 128-byte block ("blocked", the
        #: default of new filters from 1e-4 up); 0: one bit string a slice
        self.layout_version = int(meta["layout_version"])
        self.layout = "blocked" if self.layout_version == 1 else "sliced"
        self.num_slices = self.num_hashes + self.generations
        self.generation_length = -(-self.capacity // self.generations)
        if self.payload_len != _slices_len(self.layout_version, self.num_slices,
                                           self.slice_bits):
            raise ValueError("payload_len does not match k, l, slice_bits and the layout")
        self._local_cls = _local_class()
        # The position calculator: an empty local filter of the same shape
        # (calloc'd: its pages are never touched).
        self._proto: Any = _new_local(
            self._local_cls, self.num_hashes, self.generations, self.slice_bits,
            self.capacity, self.error_rate, self.window_us, 0.0 if self.window_us else None,
            seed=self.seed, secret=secret, key=key, layout=self.layout_version,
        )
        (self._bits_key,), (self._hash_key,) = shard_key_names(name, 1)
        self._cluster = is_cluster(client)
        m = self.slice_bits
        self._init_records()
        d = -(-self.window_us // self.generations) if self.window_us else 0
        self._add_script = sliding_add_script(self.num_hashes, self.layout_version)
        self._contains_script = sliding_contains_script(self.layout_version)
        self._argv_head = [self._gen, self.payload_len, self.num_slices, self.num_hashes, m,
                           self.generation_length, self.window_us, d]
        #: early shifts the server reported (time mode), for the warning
        self._early_seen = 0
        # add_many's hints (_scripts_sliding.py, "Why hints"): this client's copy of
        # the frozen slices (the Redis string's bytes; only slices of age >= k
        # at some generation are filled), the generation each copy was born
        # at (None: not held), the last generation the server reported, and
        # the bytes of reads the keys added so far pay for
        # (hint_bytes_per_key).
        self._fz: bytearray | None = None
        self._fz_birth: list[int | None] = [None] * self.num_slices
        self._fz_epoch = "0"  # the state's 'clears' when the copy was read (clear())
        self._g_seen: int | None = None
        self._fz_budget = 0
        self._hinted = [0, 0]  # keys the hints answered at hg, hg + 1 (tests look)

    # ---- creation, opening, deletion ------------------------------------------

    @classmethod
    def create(cls, client: Any, name: str, capacity: int, error_rate: float = 0.01, *,
               window: float | None = None, seed: int = 0, secret: bytes | None = None,
               key: Any = None, layout: str | None = None) -> RedisSlidingBloomFilter:
        """Create a new shared sliding filter called ``name``; an existing one is an error.

        ``window=None``: count mode (the last ``capacity`` adds); ``window``
        seconds: time mode, generations measured by the server's ``TIME``.
        ``layout``: as the local filter's (None: "blocked", layout_version
        1, from ``error_rate`` 1e-4 up, else "sliced", 0).
        """
        check_client(client)
        name = check_name(name)
        local_cls = _local_class()
        # validates capacity, error_rate, window, seed, secret, key (a tiny
        # local filter of the same design would not: sizing is by capacity)
        mod = _sliding_module()
        d = mod.sliding_design(capacity, error_rate, layout)  # the local filter's shape
        lv = 1 if d.layout == "blocked" else 0
        window_us = 0 if window is None else mod._seconds_to_us(window)
        payload_len = _slices_len(lv, d.num_hashes + d.generations, d.slice_bits)
        if payload_len > MAX_STRING_BYTES:
            raise CapacityError(
                f"the sliding filter needs {payload_len:,} bytes of slices, over the 512 MiB "
                "Redis string limit (this structure is not sharded): use a smaller capacity "
                "or a larger error_rate"
            )
        tiny = _new_local(local_cls, d.num_hashes, d.generations, 512, 1,
                                         d.error_rate, 0, None, seed=seed, secret=secret,
                                         key=key)
        meta = {
            "format": REDIS_FORMAT,
            "structure": "sliding",
            "k": str(d.num_hashes),
            "l": str(d.generations),
            "slice_bits": str(d.slice_bits),
            "capacity": str(d.capacity),
            "error_rate": float(d.error_rate).hex(),
            "window_us": str(window_us),
            "seed": str(tiny.seed),
            "keyed": "1" if secret is not None else "0",
            "key_check": str(_core.peek_header(tiny.to_bytes())["key_check"]),
            "payload_len": str(payload_len),
            "layout_version": str(lv),
            "gen": _secrets.token_hex(8),
            "state": "creating",
        }
        obj = cls(client, name, meta, secret, key)
        meta_key = meta_key_of(name)
        flat = [x for kv in meta.items() for x in kv]
        try:
            if not CLAIM_SCRIPT.run(client, [meta_key], flat):
                raise FilterExistsError(f"a Redis key {meta_key!r} already exists: "
                                        f"filter {name!r} exists (open it, or delete it first)")
            now = obj._server_time_us() if window_us else 0
            state: list[Any] = ["g", 0, "r", 0, "c", 0, "inserted", 0, "start", now,
                                "early", 0, "layout", lv]
            for p in range(obj.num_slices):
                state += [f"b{p}", f"0 {now}"]
            SLIDING_INIT.run(client, [obj._bits_key, obj._hash_key],
                              [obj._gen, payload_len, *state])
            client.hset(meta_key, "state", "ready")
        except (_RedisConnectionError, _RedisTimeoutError) as exc:
            raise RedisConnectionLost(
                f"connection to Redis failed while creating {name!r} ({exc}); the filter may "
                f"be left incomplete: RedisSlidingBloomFilter.delete_named(client, {name!r}) "
                "removes it"
            ) from exc
        return obj

    @classmethod
    def open(cls, client: Any, name: str, *, secret: bytes | None = None,
             key: Any = None) -> RedisSlidingBloomFilter:
        """Attach to the existing sliding filter ``name``."""
        meta = read_meta(client, name, "sliding", cls.__name__, secret)
        if meta.get("layout_version") not in ("0", "1"):
            raise CorruptStateError(
                f"sliding filter {name!r} has layout_version {meta.get('layout_version')!r} "
                "in its meta; this bloomkit reads 0 (sliced) and 1 (blocked)"
            )
        try:
            obj = cls(client, name, meta, secret, key)
        except (KeyError, ValueError, TypeError) as exc:
            raise FilterMismatchError(f"{name!r} has damaged metadata ({exc!r})") from exc
        if secret is not None:
            tiny = _new_local(
                obj._local_cls, obj.num_hashes, obj.generations, 512, 1, obj.error_rate, 0,
                None, seed=obj.seed, secret=secret, key=key)
            if _core.peek_header(tiny.to_bytes())["key_check"] != obj._key_check:
                raise FilterMismatchError(f"wrong secret for {name!r}")
        try:
            length = client.strlen(obj._bits_key)
            gen, early = client.hmget(obj._hash_key, "gen", "early")
        except (_RedisConnectionError, _RedisTimeoutError) as exc:
            raise wrap_connection_error(exc, f"open({name!r})") from exc
        # warn about early shifts made after this open, not before it
        obj._early_seen = int(early) if early is not None and early.isdigit() else 0
        obj._check_payload(obj._bits_key, length, gen)
        return obj

    @classmethod
    def open_or_create(cls, client: Any, name: str, capacity: int, error_rate: float = 0.01,
                       *, window: float | None = None, seed: int = 0,
                       secret: bytes | None = None, key: Any = None) -> RedisSlidingBloomFilter:
        """Open ``name`` if it exists with these parameters, else create it (race-safe)."""
        for _ in range(2):
            try:
                obj = cls.open(client, name, secret=secret, key=key)
            except FilterNotFoundError:
                try:
                    return cls.create(client, name, capacity, error_rate, window=window,
                                      seed=seed, secret=secret, key=key)
                except FilterExistsError:
                    continue  # another process created it first: open it
            obj._expect(capacity, error_rate, window, seed)
            return obj
        obj = cls.open(client, name, secret=secret, key=key)
        obj._expect(capacity, error_rate, window, seed)
        return obj

    def _expect(self, capacity: int, error_rate: float, window: float | None,
                seed: int) -> None:
        seconds_to_us = _sliding_module()._seconds_to_us
        want_window = 0 if window is None else seconds_to_us(window)
        diffs = []
        if (capacity, float(error_rate)) != (self.capacity, self.error_rate):
            diffs.append(f"capacity={self.capacity}, error_rate={self.error_rate:g} (expected "
                         f"{capacity}, {error_rate:g})")
        if want_window != self.window_us:
            diffs.append(f"window_us={self.window_us} (expected {want_window})")
        if seed != self.seed and seed % 2**64 != self.seed:
            diffs.append(f"seed {self.seed} (expected {seed})")
        if diffs:
            raise FilterMismatchError(f"filter {self.name!r} differs: " + "; ".join(diffs))

    @staticmethod
    def delete_named(client: Any, name: str) -> bool:
        """Delete the filter ``name`` (complete or not); True if it existed."""
        name = check_name(name)
        existed = bool(client.delete(meta_key_of(name)))  # first: new opens fail from here on
        (bits,), (state,) = shard_key_names(name, 1)
        pipe = client.pipeline(transaction=False)
        pipe.delete(bits)
        pipe.delete(state)
        return any(pipe.execute()) or existed

    def delete(self) -> bool:
        """Delete the filter from Redis (meta first, then the slices and state)."""
        return self.delete_named(self.client, self.name)

    def clear(self) -> None:
        """Forget every key, atomically (one script; the local ``clear``):
        generation 0, empty slices, and in time mode the window restarts at
        the server's ``TIME``.  The state's ``clears`` counter moves, so the
        frozen-slice copies of every handle (``add_many``'s hints) stop
        matching: generation numbers repeat after a clear."""
        S = self.num_slices
        reset: list[Any] = ["g", 0, "r", 0, "c", 0, "inserted", 0, "start",
                            "@now" if self.window_us else 0, "early", 0]
        for p in range(S):
            reset += [f"b{p}", "0 @now" if self.window_us else "0 0"]
        clear_state(self, self._bits_key, self._hash_key, self.payload_len, reset,
                    timed=bool(self.window_us), bump="clears")

    def copy(self, name: str, *, replace: bool = False) -> RedisSlidingBloomFilter:
        """A new Redis sliding filter ``name`` with this one's state (the same
        generation, births and, in time mode, the same window start), copied
        on the server by one script (redis/_admin.py); ``FilterExistsError``
        if ``name`` exists, unless ``replace=True``.  Returns a handle on it."""
        (dst_bits,), (dst_hash,) = shard_key_names(check_name(name), 1)
        copy_structure(self, name, replace, [(self._bits_key, dst_bits, self.payload_len)],
                       [(self._hash_key, dst_hash)])
        return type(self).open(self.client, name, secret=self._secret, key=self._keyfunc)

    __copy__ = refuse_shallow_copy

    # ---- calls ----------------------------------------------------------------------

    def _argv(self, keys: list[object]) -> list[Any]:
        return [*self._argv_head, self._records(keys)]

    def _run_many(self, script: Script, argvs: list[list[Any]], what: str,
                  confirmed: int | None) -> list[Any]:
        """One pipeline of script calls; NOSCRIPT ones again with EVAL."""
        keys = [self._bits_key, self._hash_key]
        pipe = self.client.pipeline(transaction=False)
        for argv in argvs:
            pipe.execute_command("EVALSHA", *script.args(keys, argv))
        try:
            res = pipe.execute(raise_on_error=False)
            return settle_replies(
                argvs, res,
                lambda argv: self.client.execute_command("EVAL", script.body, len(keys), *keys,
                                                         *argv),
                self.name)
        except (_RedisConnectionError, _RedisTimeoutError) as exc:
            raise wrap_connection_error(exc, what, confirmed) from exc

    def _batched(self, script: Script, keys: Iterable[object], what: str,
                 confirmed: bool) -> Iterable[Any]:
        depth = max(1, self.pipeline_depth)
        pending: list[list[object]] = []
        done = 0
        for chunk in chunked(keys, max(1, self.chunk_size)):
            pending.append(chunk)
            if len(pending) >= depth:
                yield from self._run_many(script, [self._argv(c) for c in pending], what,
                                          done if confirmed else None)
                done += sum(len(c) for c in pending)
                pending = []
        if pending:
            yield from self._run_many(script, [self._argv(c) for c in pending], what,
                                      done if confirmed else None)

    # ---- membership -----------------------------------------------------------------

    def add(self, key: object) -> bool:
        """Insert ``key`` (refreshing it); True if it was absent from the window.
        One atomic script call (it also makes any shift that is due)."""
        (new, early, g, _, _, clears), = self._run_many(self._add_script,
                                                        [self._add_argv([key], -1)], "add", 0)
        self._g_seen = int(g)
        self._see_clears(clears)
        self._check_early(int(early))
        return bool(new == b"1")

    def add_many(self, keys: Iterable[object]) -> int:
        """Add every key (chunked, pipelined); how many were absent before.

        Each chunk is one atomic script call; shifts that fall due inside a
        chunk happen there, between its keys, as in the local filter."""
        absent = 0
        early = self._early_seen
        size = max(1, self.chunk_size)
        depth = max(1, self.pipeline_depth)
        if HAVE_NUMPY:
            # hints cover the generation they were made for and the next
            # one: a trip of at most about G keys crosses at most one shift
            depth = min(depth, max(1, self.generation_length // size))
        done = 0
        trip: list[list[object]] = []
        chunks = chunked(keys, size)
        while True:
            chunk = next(chunks, None)
            if chunk is not None:
                trip.append(chunk)
                if len(trip) < depth:
                    continue
            if not trip:
                break
            n = sum(len(c) for c in trip)
            hg = self._hint_generation(n)
            res = self._run_many(self._add_script, [self._add_argv(c, hg) for c in trip],
                                 "add_many", done)
            for new, e, _, h0, h1, _ in res:
                absent += new.count(b"1")
                early = max(early, int(e))
                self._hinted[0] += h0
                self._hinted[1] += h1
            self._g_seen = int(res[-1][2])
            self._see_clears(res[-1][5])
            done += n
            trip = []
        self._check_early(early)
        return absent

    def update(self, *iterables: Iterable[object]) -> None:
        """Add the keys of every iterable."""
        for it in iterables:
            self.add_many(it)

    def __contains__(self, key: object) -> bool:
        r, = self._run_many(self._contains_script, [self._argv([key])], "contains", None)
        return bool(r == b"1")

    def contains(self, key: object) -> bool:
        """``key in self``."""
        return key in self

    def contains_many(self, keys: Iterable[object]) -> list[bool]:
        """Membership of every key, in order (at the server's time).

        A filter of at most ``snapshot_bytes_per_key`` bytes a key of the
        call is read whole, atomically with its state and the server's
        ``TIME``, and the keys are answered by the local C code (the same
        answers: it is :meth:`to_local` at that moment); a larger one gets
        one read-only script call per chunk, pipelined."""
        check_keys(keys, single=(str, bytes, bytearray, memoryview))
        if hasattr(keys, "tolist"):
            keys = keys.tolist()
        batch = keys if isinstance(keys, list) else list(keys)
        if not batch:
            return []
        if self.payload_len <= self.snapshot_bytes_per_key * len(batch):
            local, _ = self._snapshot("contains_many")
            return [bool(x) for x in local.contains_many(batch)]
        out: list[bool] = []
        for r in self._batched(self._contains_script, batch, "contains_many", False):
            out += [c == 49 for c in r]  # b"1"
        return out

    # ---- whole-filter operations ------------------------------------------------

    def _server_time_us(self) -> int:
        sec, usec = self.client.time()
        return int(sec) * 1_000_000 + int(usec)

    def _snapshot(self, what: str) -> tuple[Any, int]:
        """(a local filter with the server's state now, the server's time in us).

        One MULTI (one script on a cluster client would also do; a MULTI on
        one hash tag works on both): the slices, the state hash and TIME."""
        pipe = self.client.pipeline(transaction=True)
        for off in range(0, self.payload_len, PIECE):
            pipe.getrange(self._bits_key, off, min(off + PIECE, self.payload_len) - 1)
        pipe.hgetall(self._hash_key)
        pipe.time()
        try:
            res = pipe.execute()
        except (_RedisConnectionError, _RedisTimeoutError) as exc:
            raise wrap_connection_error(exc, what) from exc
        sec, usec = res[-1]
        now_us = int(sec) * 1_000_000 + int(usec)
        state = {as_text(k): as_text(v) for k, v in res[-2].items()}
        slices = b"".join(res[:-2])
        if state.get("gen") != self._gen or len(slices) != self.payload_len:
            raise FilterNotFoundError(
                f"Redis filter {self.name!r} was deleted or replaced while this handle was "
                "open; open it again"
            )
        return self._build_local(slices, state, now_us), now_us

    def _build_local(self, slices: bytes, state: dict[str, str], now_us: int) -> Any:
        S = self.num_slices
        births_len = _births_len(S)
        data = bytearray(HEADER_LEN + births_len + len(slices))
        g, c, inserted, start, early = (self._field(state, f) for f in _STATE_FIELDS)
        if state.get("layout", "0") != str(self.layout_version):
            raise CorruptStateError(
                f"Redis filter {self.name!r}: state field 'layout' is "
                f"{state.get('layout', '')[:40]!r}, not the layout_version "
                f"{self.layout_version} of its meta")
        for p in range(S):
            b_ins, b_t = self._birth(state, p)
            struct.pack_into("<Qq", data, HEADER_LEN + p * _BIRTH_LEN, b_ins, b_t)
        _core.init_header(data, _KIND_SLIDING, HEADER_LEN, _PARAMS_LEN,
                          births_len + len(slices), self.seed,
                          self._key_check if self.keyed else None)
        _descriptor.pack_params(
            _SLIDING, data, num_hashes=self.num_hashes, generations=self.generations,
            slice_bits=self.slice_bits, capacity=self.capacity, error_rate=self.error_rate,
            generation_length=self.generation_length, generation=g, ring=g % S,
            mode=1 if self.window_us else 0, count=c, inserted=inserted,
            window_us=self.window_us, start_us=start if self.window_us else 0,
            early_shifts=early, layout_version=self.layout_version)
        data[HEADER_LEN + births_len:] = slices
        _core.seal(data)
        local = self._local_cls.from_bytes(bytes(data), self._secret, self._keyfunc)
        local.clock = _frozen_clock(now_us)
        return local

    def to_local(self, clock: Callable[[], float] | None = None) -> Any:
        """A local :class:`bloomkit.SlidingBloomFilter` with the server's state now.

        Read atomically (slices, state and ``TIME`` in one MULTI).  Its
        ``clock`` is ``clock`` if given; by default (time mode) a clock
        stopped at the server's time of the snapshot, so it answers exactly
        as the server did then -- set ``local.clock = time.time`` to let
        it age on this machine's clock."""
        local, _ = self._snapshot("to_local")
        if clock is not None:
            local.clock = clock
        return local

    def _read_state(self) -> tuple[dict[str, str], int]:
        pipe = self.client.pipeline(transaction=True)
        pipe.hgetall(self._hash_key)
        pipe.time()
        try:
            raw, (sec, usec) = pipe.execute()
        except (_RedisConnectionError, _RedisTimeoutError) as exc:
            raise wrap_connection_error(exc, "stats") from exc
        state = {as_text(k): as_text(v) for k, v in raw.items()}
        if state.get("gen") != self._gen:
            raise FilterNotFoundError(
                f"Redis filter {self.name!r} was deleted or replaced while this handle was "
                "open; open it again"
            )
        return state, int(sec) * 1_000_000 + int(usec)

    def _field(self, state: dict[str, str], field: str) -> int:
        """A state field, checked (CorruptStateError names a damaged one)."""
        return state_int(state.get(field, "missing"), field, self.name, signed=field == "start")

    def _birth(self, state: dict[str, str], p: int) -> tuple[int, int]:
        """Physical slice p's birth record, (inserted, time), checked."""
        parts = state.get(f"b{p}", "missing").split(" ")
        if len(parts) != 2:
            parts = ["damaged", "0"]
        return (state_int(parts[0], f"b{p}", self.name),
                state_int(parts[1], f"b{p}", self.name, signed=True))

    def _pending(self, start: int, now_us: int) -> int:
        if not self.window_us or now_us <= start:
            return 0
        return (now_us - start) // -(-self.window_us // self.generations)

    def __len__(self) -> int:
        """Insertions the window holds now (``stats()["keys_in_window"]``)."""
        state, now = self._read_state()
        skip = self._pending(self._field(state, "start"), now)
        if skip > self.generations:
            return 0
        g = self._field(state, "g")
        born = self._birth(state, (g - (self.generations - skip)) % self.num_slices)[0]
        return max(0, self._field(state, "inserted") - born)

    @property
    def generation(self) -> int:
        """Shifts since creation (pending time shifts not counted)."""
        return self._field(self._read_state()[0], "g")

    @property
    def early_shifts(self) -> int:
        """Time mode: shifts forced by a full generation (see stats())."""
        return self._field(self._read_state()[0], "early")

    def stats(self) -> dict[str, Any]:
        """The local filter's ``stats()`` at the server's time now (reads the
        whole filter: the estimated error rate needs every slice's fill)."""
        local, _ = self._snapshot("stats")
        out: dict[str, Any] = local.stats()
        return out

    def _check_early(self, early: int) -> None:
        if early > self._early_seen:
            first = self._early_seen == 0
            self._early_seen = early
            if first:
                warnings.warn(
                    f"RedisSlidingBloomFilter {self.name!r} shifted early: more than "
                    f"{self.generation_length} adds (capacity / l) arrived within "
                    f"{self.window_us / self.generations / 1e6:g} s (window / l), so keys are "
                    "kept for less than the window (stats() says how much).  Fix: a larger "
                    "capacity (at least the adds of one window at the peak rate).",
                    _sliding_module().SlidingWindowWarning, stacklevel=3,
                )

    def __repr__(self) -> str:
        mode = (f"window={self.window_us / 1e6:g}" if self.window_us else "window=None")
        return (
            f"RedisSlidingBloomFilter(name={self.name!r}, capacity={self.capacity}, "
            f"error_rate={self.error_rate:g}, {mode}, num_hashes={self.num_hashes}, "
            f"generations={self.generations}, slice_bits={self.slice_bits}, "
            f"layout={self.layout!r}, seed={self.seed}"
            f"{', keyed' if self.keyed else ''})"
        )


def _frozen_clock(now_us: int) -> Callable[[], float]:
    """A clock stopped at now_us (the local filter floors clock() * 10^6, so
    the half microsecond keeps the same integer)."""
    t = (now_us + 0.5) / 1_000_000

    def clock() -> float:
        return t

    return clock
