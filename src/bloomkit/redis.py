"""Bloom filters shared through a Redis server (plain Redis >= 6.2 or Valkey).

``pip install 'bloomkit[redis]'`` (the ``redis`` client package).  Many
processes on many machines add to and query one filter; no server module is
needed.  See docs/redis.md for the full contract; in short:

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
- RedisCountingBloomFilter / RedisCountMinSketch (end of the module): the
  same principle over counters, see docs/redis.md.
- Sharded mode (blocked layout): shard ``s`` holds the contiguous blocks
  ``[s * B, (s + 1) * B)`` of the one global layout, under the hash tag
  ``{name:s}``; a key's block decides its shard, so positions, answers and
  the bytes of :meth:`to_local` are those of the unsharded filter.

The module is named ``bloomkit.redis``; ``import redis`` below is an absolute
import of the third-party client package.
"""

from __future__ import annotations

import math
import re
import secrets as _secrets
import struct
from collections import deque
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any, ClassVar

import redis.cluster
from redis.exceptions import ConnectionError as _RedisConnectionError
from redis.exceptions import NoScriptError, ResponseError
from redis.exceptions import TimeoutError as _RedisTimeoutError

from . import _core
from .bloom import KIND_BLOCKED_BLOOM, KIND_BLOOM, BlockedBloomFilter, BloomFilter
from .counting import CountingBloomFilter
from .design import BLOCK_BITS, blocked_estimate_count, design
from .errors import BloomkitError, CapacityError, IncompatibleFiltersError
from .sketch import CountMinSketch

__all__ = [
    "MAX_STRING_BYTES",
    "FilterExistsError",
    "FilterMismatchError",
    "FilterNotFoundError",
    "RedisBloomFilter",
    "RedisConnectionLost",
    "RedisCountMinSketch",
    "RedisCountingBloomFilter",
    "RedisFilterError",
]

#: Largest Redis string (and BITFIELD offset range): 512 MiB.  A filter whose
#: payload is bigger must be sharded.
MAX_STRING_BYTES = 512 * 1024 * 1024

#: Stored in the ``format`` field of the meta hash; the number is the major
#: version of this Redis layout (a reader refuses other majors).
REDIS_FORMAT = "bloomkit-redis/1"

#: The format of a blocked RedisBloomFilter of layout version 1 (its meta also
#: has ``layout_version`` = 1): a reader from before version 1 existed would
#: derive other in-block bits (false negatives), and refuses this major.
#: Classic filters and blocked filters of version 0 (no ``layout_version``
#: field, every filter created before) keep REDIS_FORMAT.
REDIS_FORMAT_BLOCKED_V1 = "bloomkit-redis/2"

_HEADER_LEN = 128  # header_len of kinds 1 and 2 (docs/FORMAT.md)
_PARAMS_LEN = 48
_PIECE = 16 * 1024 * 1024  # bytes per GETRANGE / SETRANGE when moving whole shards


class RedisFilterError(BloomkitError):
    """Base class of the errors of :mod:`bloomkit.redis`."""


class FilterNotFoundError(RedisFilterError, LookupError):
    """No filter of that name (never created, deleted, or deleted under a live handle)."""


class FilterExistsError(RedisFilterError):
    """``create`` found a filter (or another object) under that name already."""


class FilterMismatchError(RedisFilterError, ValueError):
    """The stored filter is not what the caller expects (parameters, secret, format)."""


class RedisConnectionLost(RedisFilterError, ConnectionError):
    """The connection failed during an operation.

    ``confirmed`` keys were acknowledged by the server; every other key of
    the call was either fully added or not at all (each chunk is one atomic
    script call).  Adds are idempotent, so retrying the whole call is safe.
    """

    def __init__(self, message: str, confirmed: int = 0) -> None:
        super().__init__(message)
        self.confirmed = confirmed


# ---- Begin Lua scripts --------------------------------------------------------
#
# Every script checks, in O(1), that the shard still belongs to the handle:
# the shard hash's ``gen`` (a random id written by ``create``) and the exact
# length of the bits string.  A filter deleted (or deleted and created again)
# under a live handle is an error, never a silently re-grown key.
#
# KEYS[1] = the shard's bits string, KEYS[2] = the shard's hash
#           {gen, adds, base}.
# ARGV[1] = gen, ARGV[2] = the shard's length in bytes, ARGV[3] = k,
# ARGV[4] = the keys' Redis bit offsets, k per key, in decimal separated by
#           spaces: global bit p of shard s is offset (p - s * shard_bits) ^ 7.
# Offsets travel as text and reach BITFIELD as the very strings string.gmatch
# yields: no number-to-string conversion per argument (measured about 30%
# less server CPU than sending binary u64s and converting in Lua).

_LUA_CHECK = """
if redis.call('HGET', KEYS[2], 'gen') ~= ARGV[1]
   or redis.call('STRLEN', KEYS[1]) ~= tonumber(ARGV[2]) then
  return redis.error_reply('BKGONE bloomkit filter was deleted or replaced')
end
local k = tonumber(ARGV[3])
local out = {}
local args = {}
local i = 0
local j = 0
"""

# add / contains are generated for the filter's k (_bloom_script): the loop
# takes k offsets from the string.gmatch iterator straight into the argument
# list of one BITFIELD (BITFIELD_RO) per key, and tests the k replies with an
# unrolled condition -- no argument table, no unpack, no inner loop.  Same
# commands and the same atomicity as a loop over an argument table, measured
# about 10% less server CPU per key (docs/redis.md, "Throughput").
_LUA_BLOOM = """
if redis.call('HGET', KEYS[2], 'gen') ~= ARGV[1]
   or redis.call('STRLEN', KEYS[1]) ~= tonumber(ARGV[2]) then
  return redis.error_reply('BKGONE bloomkit filter was deleted or replaced')
end
local K = KEYS[1]
local it = string.gmatch(ARGV[4], '%d+')
local out = {}
local new = 0
local j = 0
while true do
  local o = it()
  if o == nil then break end
  local b = redis.call(@CALL@)
  j = j + 1
  if @TEST@ then new = new + 1; out[j] = '1' else out[j] = '0' end
end
@TAIL@
return table.concat(out)
"""


def _bloom_script_body(op: str, k: int) -> str:
    """The add (``op == "add"``) or contains script of a k-probe filter."""
    if op == "add":
        call = "'BITFIELD', K, " + ", ".join(
            ["'SET', 'u1', o, '1'"] + ["'SET', 'u1', it(), '1'"] * (k - 1))
        test = " or ".join(f"b[{q}] == 0" for q in range(1, k + 1))
        tail = "if new > 0 then redis.call('HINCRBY', KEYS[2], 'adds', new) end"
    else:
        call = "'BITFIELD_RO', K, " + ", ".join(
            ["'GET', 'u1', o"] + ["'GET', 'u1', it()"] * (k - 1))
        test = " and ".join(f"b[{q}] == 1" for q in range(1, k + 1))
        tail = ""
    return _LUA_BLOOM.replace("@CALL@", call).replace("@TEST@", test).replace("@TAIL@", tail)


# merge: KEYS[3] = the uploaded local slice (same length as the shard).
_LUA_MERGE = (
    _LUA_CHECK
    + """
if redis.call('STRLEN', KEYS[3]) ~= tonumber(ARGV[2]) then
  redis.call('DEL', KEYS[3])
  return redis.error_reply('BKUPLOAD merge upload incomplete')
end
redis.call('BITOP', 'OR', KEYS[1], KEYS[1], KEYS[3])
redis.call('DEL', KEYS[3])
local pop = redis.call('BITCOUNT', KEYS[1])
redis.call('HSET', KEYS[2], 'base', pop, 'adds', 0)
return pop
"""
)

# create: claim the name (KEYS[1] = meta) if free.
_LUA_CLAIM = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1
"""

# create: (re)initialise one shard: ARGV[1] = gen, ARGV[2] = length.
_LUA_INIT_SHARD = """
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SETRANGE', KEYS[1], tonumber(ARGV[2]) - 1, '\\0')
redis.call('HSET', KEYS[2], 'gen', ARGV[1], 'adds', 0, 'base', 0)
return 1
"""

# snapshot of one shard's counter with its bits (to_local) on a cluster
# client: see _read_shard.  ARGV[1] = the shard's length, ARGV[2] = piece size;
# returns gen, adds, base (nil when missing), then the pieces of the bits.
_LUA_READ_SHARD = """
local out = redis.call('HMGET', KEYS[2], 'gen', 'adds', 'base')
local len, piece = tonumber(ARGV[1]), tonumber(ARGV[2])
for off = 0, len - 1, piece do
  out[#out + 1] = redis.call('GETRANGE', KEYS[1], off, math.min(off + piece, len) - 1)
end
return out
"""
# ---- End Lua scripts ----------------------------------------------------------


class _Script:
    """A Lua script run by EVALSHA, falling back to EVAL on NOSCRIPT."""

    def __init__(self, body: str) -> None:
        import hashlib

        self.body = body
        self.sha = hashlib.sha1(body.encode()).hexdigest()

    def args(self, keys: list[str], argv: list[Any]) -> list[Any]:
        return [self.sha, len(keys), *keys, *argv]

    def run(self, client: Any, keys: list[str], argv: list[Any]) -> Any:
        try:
            return client.execute_command("EVALSHA", *self.args(keys, argv))
        except NoScriptError:
            return client.execute_command("EVAL", self.body, len(keys), *keys, *argv)


_MERGE = _Script(_LUA_MERGE)
_CLAIM = _Script(_LUA_CLAIM)
_INIT_SHARD = _Script(_LUA_INIT_SHARD)
_READ_SHARD = _Script(_LUA_READ_SHARD)

def _round_half_away(x: float) -> int:
    """C ``llround`` for x >= 0 (Python's round() rounds half to even)."""
    i = math.floor(x)
    return i + 1 if x - i >= 0.5 else i


def _union_count(num_bits: int, k: int, popcount: int, blocked: bool = False) -> int:
    """The count the local filter stores after a union (py_bloom.c bkbloom_recount:
    estimate_count(), whose blocked form is design.blocked_estimate_count)."""
    m, x = float(num_bits), float(popcount)
    if x >= m:
        est = m
    elif blocked:
        est = blocked_estimate_count(num_bits // BLOCK_BITS, k, popcount)
    else:
        est = -m / k * math.log1p(-x / m)
    if not est >= 0.0:
        est = 0.0
    return _round_half_away(min(est, m))


def _wrap_connection_error(
    exc: Exception, what: str, confirmed: int | None = None
) -> RedisConnectionLost:
    """``confirmed`` is for adds only; None for calls that write no keys (open, to_local)."""
    if confirmed is None:
        return RedisConnectionLost(
            f"connection to Redis failed during {what} ({type(exc).__name__}: {exc}); "
            "it only reads, so nothing was changed and it can be retried"
        )
    return RedisConnectionLost(
        f"connection to Redis failed during {what} ({type(exc).__name__}: {exc}); "
        f"{confirmed} keys were confirmed; every other key was either fully added or not "
        "at all (one atomic script call per chunk), and adds are idempotent, so retrying "
        "is safe",
        confirmed,
    )


class _ErrorReply:
    """An error reply (``-...``) read by :class:`_RawReader`."""

    def __init__(self, text: str) -> None:
        self.text = text


class _RawReader:
    """Reads raw replies (RESP2, and the RESP3 types these commands can get)
    from a redis-py connection's socket.

    Used only for round trips whose every reply was sent by us in one packed
    write and is read here in full, so the client's parser holds no buffered
    bytes of them.  The fast path (:meth:`records`) takes n fixed-size
    replies in one piece after one regular expression; anything else (an
    error reply, a short string of a deleted key) makes it return None
    without consuming, and :meth:`reply` then reads the replies one by one,
    so the reader never waits for bytes the server will not send.
    """

    def __init__(self, conn: Any) -> None:
        self.sock = conn._sock
        self.buf = bytearray()
        self.pos = 0

    def _fill(self) -> None:
        piece = self.sock.recv(1 << 18)
        if not piece:
            raise _RedisConnectionError("connection closed by server")
        if self.pos > 1 << 16:  # records() runs with pos == 0, so its offsets hold
            del self.buf[:self.pos]
            self.pos = 0
        self.buf += piece

    def records(self, n: int, size: int, lead: bytes, pattern: re.Pattern[bytes]
                ) -> bytes | None:
        """n replies of ``size`` bytes, each starting with ``lead`` and all
        matching ``pattern`` (one reply, repeated), or None."""
        if self.pos:
            del self.buf[:self.pos]
            self.pos = 0
        need = n * size
        checked = 0
        while len(self.buf) < need:
            checked = pattern.match(self.buf, checked).end()  # type: ignore[union-attr]
            rest = len(self.buf) - checked
            if rest >= size or self.buf[checked:checked + len(lead)] != lead[:rest]:
                return None  # not one of the expected replies: read them one by one
            self._fill()
        data = bytes(self.buf[:need])
        if pattern.fullmatch(data) is None:
            return None
        self.pos = need
        return data

    def line(self) -> bytes:
        while True:
            i = self.buf.find(b"\r\n", self.pos)
            if i >= 0:
                out = bytes(self.buf[self.pos:i])
                self.pos = i + 2
                return out
            self._fill()

    def _blob(self, n: int) -> bytes:
        while len(self.buf) - self.pos < n + 2:
            self._fill()
        out = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n + 2
        return out

    def reply(self) -> Any:
        """One reply (RESP2 or the RESP3 types these commands can get): bytes,
        None, int, list or :class:`_ErrorReply`; push messages are skipped."""
        while True:
            head = self.line()
            kind, rest = head[:1], head[1:]
            if kind != b">":
                break
            for _ in range(int(rest)):  # RESP3 out-of-band push: not a reply
                self.reply()
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._blob(n)
        if kind == b":":
            return int(rest)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        if kind == b"_":
            return None
        if kind == b"-":
            return _ErrorReply(rest.decode("utf-8", "replace"))
        if kind == b"!":
            return _ErrorReply(self._blob(int(rest)).decode("utf-8", "replace"))
        if kind == b"+":
            return rest
        raise _RedisConnectionError(f"unparsable reply from Redis: {head[:40]!r}")


def _resp(command: str, args: list[Any]) -> bytes:
    """One command in RESP (bulk strings)."""
    parts = [b"*%d\r\n$%d\r\n%s\r\n" % (len(args) + 1, len(command), command.encode())]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(parts)


def _pool_connection(pool: Any) -> Any:
    """A connection from a redis-py pool (before 5.3 the command name was required)."""
    try:
        return pool.get_connection()
    except TypeError:
        return pool.get_connection("GETRANGE")


def _as_redis_error(exc: BaseException) -> Exception:
    if isinstance(exc, (_RedisConnectionError, _RedisTimeoutError)):
        return exc
    return _RedisConnectionError(f"{type(exc).__name__}: {exc}")


def _map_response_error(exc: ResponseError, name: str) -> Exception:
    text = str(exc)
    if "BKGONE" in text:
        return FilterNotFoundError(
            f"Redis filter {name!r} was deleted or replaced while this handle was open; "
            "open it again"
        )
    return exc


def _check_name(name: object) -> str:
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, not {type(name).__name__}")
    if not name or len(name) > 512 or "{" in name or "}" in name:
        raise ValueError("name must be 1..512 characters without '{' or '}' (hash tags)")
    return name


def _check_client(client: Any) -> None:
    kwargs: dict[str, Any] = {}
    getter = getattr(client, "get_connection_kwargs", None)
    if getter is not None:
        kwargs = getter()
    if kwargs.get("decode_responses"):
        raise ValueError(
            "the Redis client must be created with decode_responses=False (the filter "
            "reads binary strings)"
        )


def _is_cluster(client: Any) -> bool:
    return isinstance(client, redis.cluster.RedisCluster)


def _header(
    kind: int,
    num_bits: int,
    num_hashes: int,
    capacity: int,
    error_rate: float,
    seed: int,
    keyed: bool,
    key_check: int,
    payload_len: int,
    count: int,
    layout_version: int = 0,
) -> bytearray:
    """The 128-byte header of kinds 1 and 2 (docs/FORMAT.md), checksum left 0.

    The fixed 64 bytes come from bk_format_init_header (the one writer of a
    header, issue #24); only the Bloom params that a Redis structure keeps
    in its meta hash are packed here, in bk_bloom.h's order."""
    h = bytearray(_HEADER_LEN)
    _core.init_header(h, kind, _HEADER_LEN, _PARAMS_LEN, payload_len, seed,
                      key_check if keyed else None)
    struct.pack_into("<QIIQdQQ", h, 64, num_bits, num_hashes, layout_version, capacity,
                     error_rate, count, 0)
    return h


def _chunks(keys: Iterable[object], size: int) -> Iterator[list[object]]:
    if hasattr(keys, "tolist") and not isinstance(keys, (bytes, bytearray, memoryview)):
        keys = keys.tolist()  # numpy arrays: same keys, much faster iteration
    if isinstance(keys, (str, bytes, bytearray, memoryview)):
        raise TypeError("keys must be an iterable of keys, not a single str or bytes")
    it = iter(keys)
    while True:
        chunk = list(islice(it, size))
        if not chunk:
            return
        yield chunk


class RedisBloomFilter:
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
        self._proto: Any = _core.BloomBase.__new__(
            self._cls, layout_id, self.num_bits, self.num_hashes, self.capacity,
            self.error_rate, seed=self.seed, secret=secret, key=key,
        )
        self._shard_bits = self.shard_bytes * 8
        self._bits_keys, self._hash_keys = _shard_keys(name, self.shards)
        self._lens = [
            min(self.shard_bytes, self.payload_len - s * self.shard_bytes)
            for s in range(self.shards)
        ]
        self._cluster = _is_cluster(client)
        k = self.num_hashes
        self._add_script = _bloom_script("add", k)
        self._contains_script = _bloom_script("contains", k)
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
        _check_client(client)
        name = _check_name(name)
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
        meta_key = _meta_key(name)
        flat = [x for kv in meta.items() for x in kv]
        try:
            if not _CLAIM.run(client, [meta_key], flat):
                raise FilterExistsError(f"a Redis key {meta_key!r} already exists: "
                                        f"filter {name!r} exists (open it, or delete it first)")
            for s in range(shards):
                _INIT_SHARD.run(client, [obj._bits_keys[s], obj._hash_keys[s]],
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
        _check_client(client)
        name = _check_name(name)
        meta_key = _meta_key(name)
        try:
            raw = client.hgetall(meta_key)
        except (_RedisConnectionError, _RedisTimeoutError) as exc:
            raise _wrap_connection_error(exc, f"open({name!r})") from exc
        except ResponseError as exc:
            raise FilterMismatchError(f"Redis key {meta_key!r} is not a bloomkit filter "
                                      f"({exc})") from exc
        if not raw:
            raise FilterNotFoundError(f"no bloomkit filter {name!r} in Redis (key "
                                      f"{meta_key!r} does not exist)")
        meta = {_text(k): _text(v) for k, v in raw.items()}
        fmt = meta.get("format", "")
        if not fmt.startswith("bloomkit-redis/") or meta.get("structure") != "bloom":
            raise FilterMismatchError(
                f"Redis key {meta_key!r} does not hold a bloomkit Bloom filter "
                f"(format={fmt!r}, structure={meta.get('structure')!r})"
            )
        if fmt not in (REDIS_FORMAT, REDIS_FORMAT_BLOCKED_V1):
            raise FilterMismatchError(
                f"filter {name!r} uses Redis layout {fmt!r}; this bloomkit reads {REDIS_FORMAT!r} "
                f"and {REDIS_FORMAT_BLOCKED_V1!r}"
            )
        if meta.get("state") != "ready":
            raise RedisFilterError(
                f"filter {name!r} is being created or its creation was interrupted; "
                f"RedisBloomFilter.delete_named(client, {name!r}) removes it"
            )
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
        if (meta["keyed"] == "1") != (secret is not None):
            raise FilterMismatchError(
                f"filter {name!r} was created "
                + ("with a secret: pass secret=" if meta["keyed"] == "1" else
                   "without a secret: do not pass secret=")
            )
        _expect(name, meta, capacity, error_rate, layout, seed, shards)
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
            raise _wrap_connection_error(exc, f"open({self.name!r})") from exc
        for s in range(self.shards):
            length, gen = res[2 * s], res[2 * s + 1]
            if length != self._lens[s] or gen is None or _text(gen) != self._gen:
                raise FilterMismatchError(
                    f"filter {self.name!r}: shard {s} ({self._bits_keys[s]!r}) is missing, "
                    f"of the wrong size ({length} bytes, expected {self._lens[s]}) or from "
                    "another creation: the filter is damaged"
                )

    @staticmethod
    def delete_named(client: Any, name: str) -> bool:
        """Delete the filter ``name`` (complete or not); True if it existed."""
        name = _check_name(name)
        meta_key = _meta_key(name)
        raw = client.hget(meta_key, "shards")
        shards = int(raw) if raw is not None and _text(raw).isdigit() else 1
        existed = bool(client.delete(meta_key))  # first: new opens fail from here on
        bits, hashes = _shard_keys(name, max(1, shards))
        pipe = client.pipeline(transaction=False)
        for b, h in zip(bits, hashes, strict=True):
            pipe.delete(b)  # one key per DEL: cluster pipelines refuse multi-key DEL
            pipe.delete(h)
        existed = any(pipe.execute()) or existed
        return existed

    def delete(self) -> bool:
        """Delete the filter from Redis (meta first, then every shard)."""
        return self.delete_named(self.client, self.name)

    # ---- keys ---------------------------------------------------------------------

    def shard_of(self, key: object) -> int:
        """The shard holding ``key``'s bits: its first position // (8 * shard_bytes)."""
        return int(self._proto._bit_positions(key)[0]) // self._shard_bits

    @property
    def shard_keys(self) -> list[str]:
        """The Redis keys of the bit strings, shard 0 first."""
        return list(self._bits_keys)

    def _calls(self, script: _Script, chunk: list[object]) -> list[tuple[int, list[int],
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

    def _argv(self, script: _Script, s: int, flat: list[int], k: int) -> list[Any]:
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
            out: list[bytes] = []
            for args, r in zip(calls, res, strict=True):
                if isinstance(r, NoScriptError):
                    body = _SCRIPTS[args[0]]
                    try:
                        r = self.client.execute_command("EVAL", body, *args[1:])
                    except ResponseError as exc:  # e.g. BKGONE on a fresh script cache
                        r = exc
                if isinstance(r, ResponseError):
                    raise _map_response_error(r, self.name)
                if isinstance(r, Exception):
                    raise r
                out.append(r)
            return out
        except (_RedisConnectionError, _RedisTimeoutError) as exc:
            raise _wrap_connection_error(exc, what, confirmed) from exc

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

    def _batches(self, script: _Script, keys: Iterable[object]
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
        for chunk in _chunks(keys, max(1, self.chunk_size)):
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
        for chunk in _chunks(keys, max(1, self.chunk_size)):
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
        conn.send_packed_command([b"".join([_resp("EVALSHA", a) for a in calls])],
                                 check_health=check)

    def _read_evalsha(self, conn: Any, reader: _RawReader, calls: list[list[Any]],
                      inflight: deque[Any]) -> tuple[list[bytes], int]:
        """The replies of one trip of script calls; NOSCRIPT ones run again with
        EVAL once every trip in flight is read (they then count as this trip's)."""
        out: list[bytes] = []
        retry: list[list[Any]] = []
        drained = 0

        def take(batch: list[list[Any]]) -> None:
            for args in batch:
                r = reader.reply()
                if isinstance(r, _ErrorReply):
                    if r.text.startswith("NOSCRIPT"):
                        retry.append(args)
                        continue
                    raise _map_response_error(ResponseError(r.text), self.name)
                out.append(r)

        take(calls)
        if retry:
            while inflight:  # their replies come first on this connection
                more, n = inflight.popleft()
                take(more)
                drained += n
            again, retry[:] = list(retry), []
            conn.send_packed_command(
                [b"".join([_resp("EVAL", [_SCRIPTS[a[0]], *a[1:]]) for a in again])],
                check_health=False)
            take(again)
            if retry:
                raise RedisFilterError("Redis answered NOSCRIPT to EVAL")
        return out, drained

    def _raw_pipeline(self, trips: Iterator[tuple[Any, int]],
                      send: Any, read: Any, what: str) -> Iterator[Any]:
        """Run trips on one pooled connection, one trip ahead: trip i + 1 is
        written before the replies of trip i are read, so the server works
        while the client packs.  Yields each trip's result in order."""
        pool = self.client.connection_pool
        conn = _pool_connection(pool)
        reader: _RawReader | None = None
        inflight: deque[tuple[Any, int]] = deque()
        confirmed = 0
        try:
            for item, n in trips:
                send(conn, item, reader is None)
                if reader is None:
                    reader = _RawReader(conn)
                elif conn._sock is not reader.sock:
                    raise _RedisConnectionError("the connection was reset")
                inflight.append((item, n))
                if len(inflight) > self._trips_ahead:
                    item, n = inflight.popleft()
                    result, extra = read(conn, reader, item, inflight)
                    yield result
                    confirmed += n + extra
            while inflight:
                assert reader is not None
                item, n = inflight.popleft()
                result, extra = read(conn, reader, item, inflight)
                yield result
                confirmed += n + extra
        except (_RedisConnectionError, _RedisTimeoutError, OSError) as exc:
            conn.disconnect()
            raise _wrap_connection_error(
                _as_redis_error(exc), what, confirmed if what.startswith("add") else None
            ) from exc
        except BaseException:
            conn.disconnect()  # replies may be left unread: never reuse this socket
            raise
        finally:
            pool.release(conn)

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

    def _contains_raw(self, keys: Iterable[object]) -> list[bool]:
        out: list[bool] = []
        per_trip = max(1, self.chunk_size) * max(1, self.pipeline_depth)
        trips = ((chunk, len(chunk)) for chunk in _chunks(keys, per_trip))
        for result in self._raw_pipeline(trips, self._send_contains, self._read_contains,
                                         "contains_many"):
            out += result
        return out

    def _send_contains(self, conn: Any, chunk: list[object], check: bool) -> None:
        if self.layout == "blocked":
            payload = self._pack_getrange(chunk)
        else:
            payload = self._pack_bitfield_ro(chunk)
        conn.send_packed_command([payload], check_health=check)

    def _contains_trip(self, conn: Any, chunk: list[object]) -> list[bool]:
        """One round trip on its own (tests)."""
        self._send_contains(conn, chunk, False)
        return self._read_contains(conn, _RawReader(conn), chunk, deque())[0]

    def _read_contains(self, conn: Any, reader: _RawReader, chunk: list[object],
                       inflight: deque[Any]) -> tuple[list[bool], int]:
        """The replies of one trip: one per key, then each shard's gen and length."""
        n = len(chunk)
        data = reader.records(n, self._raw_size, self._raw_lead, self._raw_pattern)
        if data is None:
            return self._slow_replies(conn, reader, chunk), 0
        self._check_tail([reader.reply() for _ in range(2 * self.shards)])
        if self.layout == "blocked":
            return self._test_blocks(chunk, data), 0
        rec = self._raw_size
        h = rec - 4 * self.num_hashes
        zero = b":0"
        return [zero not in data[i + h:i + rec] for i in range(0, rec * n, rec)], 0

    def _check_tail(self, tail: list[Any]) -> None:
        gen = self._gen.encode()
        for s in range(self.shards):
            if tail[2 * s] != gen or tail[2 * s + 1] != self._lens[s]:
                raise FilterNotFoundError(
                    f"Redis filter {self.name!r} was deleted or replaced while this handle "
                    "was open; open it again"
                )

    def _slow_replies(self, conn: Any, reader: _RawReader, chunk: list[object]) -> list[bool]:
        """The replies were not all of the expected fixed form (an error, a
        deleted key, a RESP3 push between them): read them one by one."""
        n = len(chunk)
        try:
            replies = [reader.reply() for _ in range(n + 2 * self.shards)]
        except BaseException:
            conn.disconnect()
            raise
        cmd = "GETRANGE" if self.layout == "blocked" else "BITFIELD_RO"
        for r in replies:
            if isinstance(r, _ErrorReply):
                conn.disconnect()  # the caller's handler does too; never reuse it
                raise RedisFilterError(f"unexpected reply to {cmd} on {self.name!r}: "
                                       f"{r.text!r}")
        self._check_tail(replies[n:])
        k = self.num_hashes
        if self.layout == "blocked":
            if all(isinstance(r, bytes) and len(r) == 64 for r in replies[:n]):
                return self._test_blocks(
                    chunk, b"".join([b"$64\r\n" + r + b"\r\n" for r in replies[:n]]))
        elif all(isinstance(r, list) and len(r) == k and set(r) <= {0, 1}
                 for r in replies[:n]):
            return [0 not in r for r in replies[:n]]
        conn.disconnect()
        raise RedisFilterError(f"unexpected reply to {cmd} on {self.name!r}: "
                               f"{replies[:1]!r}"[:300])

    def _pack_getrange(self, chunk: list[object]) -> bytes:
        kh = self._proto._key_hash
        nb = self._num_blocks
        nxt = self._pack_next
        parts: list[str] = []
        add = parts.append
        if self.shards == 1:
            first = self._pack_first[0]
            for key in chunk:
                a = (kh(key) * nb >> 64) << 6  # block = mulhi(h, num_blocks), as in C
                sa = str(a)
                se = str(a + 63)
                add(first[len(sa)])
                add(sa)
                add(nxt[len(se)])
                add(se)
        else:
            bps = self._blocks_per_shard
            firsts = self._pack_first
            for key in chunk:
                s, r = divmod(kh(key) * nb >> 64, bps)
                a = r << 6
                sa = str(a)
                se = str(a + 63)
                add(firsts[s][len(sa)])
                add(sa)
                add(nxt[len(se)])
                add(se)
        add("\r\n")
        add(self._raw_tail)
        return "".join(parts)[2:].encode()

    def _pack_bitfield_ro(self, chunk: list[object]) -> bytes:
        pos = self._proto._bit_positions
        head = self._pack_first[0][0]  # classic filters are never sharded
        nxt = self._pack_next
        parts: list[str] = []
        add = parts.append
        for key in chunk:
            add(head)
            for q in pos(key):
                o = str(q ^ 7)
                add(nxt[len(o)])
                add(o)
        add("\r\n")
        add(self._raw_tail)
        return "".join(parts)[2:].encode()

    def _test_blocks(self, chunk: list[object], data: bytes) -> list[bool]:
        """Each key's k bits in its block (GETRANGE replies, 71 bytes each)."""
        buf = bytearray(self._tiny_header + bytes(BLOCK_BITS // 8))
        lo = len(self._tiny_header)
        hi = lo + BLOCK_BITS // 8
        tiny = self._cls._from_buffer(buf, self._secret, self._keyfunc)
        view = memoryview(data)
        out: list[bool] = []
        add = out.append
        o = 5
        try:
            for key in chunk:
                buf[lo:hi] = view[o:o + 64]
                add(key in tiny)
                o += 71
        finally:
            tiny._detach()
            view.release()
        return out

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
        if gen is None or _text(gen) != self._gen:
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
        return _union_count(self.num_bits, self.num_hashes, base,
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

    def _read_shard(self, s: int, out: memoryview) -> tuple[int, int]:
        """Copy shard s into out, atomically with its counter (one MULTI)."""
        length = self._lens[s]
        if self._cluster:
            # One script instead of MULTI: cluster pipelines of redis-py < 6
            # refuse transactions; a script is atomic on every version.
            res = list(_READ_SHARD.run(self.client, [self._bits_keys[s], self._hash_keys[s]],
                                       [length, _PIECE]))
            res = [*res[3:], res[:3]]
        else:
            pipe = self.client.pipeline(transaction=True)
            for off in range(0, length, _PIECE):
                pipe.getrange(self._bits_keys[s], off, min(off + _PIECE, length) - 1)
            pipe.hmget(self._hash_keys[s], "gen", "adds", "base")
            res = pipe.execute()
        gen, adds, base = res[-1]
        if gen is None or _text(gen) != self._gen:
            raise FilterNotFoundError(
                f"Redis filter {self.name!r} was deleted or replaced while this handle was open"
            )
        pos = 0
        for piece in res[:-1]:
            out[pos:pos + len(piece)] = piece
            pos += len(piece)
        if pos != length:
            raise FilterNotFoundError(f"Redis filter {self.name!r}: shard {s} has the wrong size")
        return int(adds or 0), int(base or 0)

    def to_local(self) -> Any:
        """A local filter with the same bits, byte-identical to the local build.

        Each shard is read atomically together with its counter; the count
        is ``round(union estimate of the popcount at the last merge) + new
        adds since`` -- exactly what the local filter stores after the same
        operations in the order the server ran them.
        """
        data = bytearray(_HEADER_LEN + self.payload_len)
        view = memoryview(data)
        counts = []
        try:
            for s in range(self.shards):
                start = _HEADER_LEN + s * self.shard_bytes
                counts.append(self._read_shard(s, view[start:start + self._lens[s]]))
        except (_RedisConnectionError, _RedisTimeoutError) as exc:
            raise _wrap_connection_error(exc, "to_local") from exc
        count = self._count(counts)
        data[:_HEADER_LEN] = _header(
            self._kind, self.num_bits, self.num_hashes, self.capacity, self.error_rate,
            self.seed, self.keyed, self._key_check, self.payload_len, count,
            self.layout_version,
        )
        _core.seal(data)
        return self._cls.from_bytes(data, self._secret, self._keyfunc)

    def merge_from(self, local: Any) -> None:
        """OR a local filter of the same shape into the shared one.

        Each shard is merged by one script (BITOP OR of an uploaded copy,
        then the count reset to the local union's estimate), atomic against
        every other command: unsharded, the whole merge is atomic.
        """
        data = memoryview(local.to_bytes()) if isinstance(local, self._cls) else None
        self._check_compatible(local, data)
        assert data is not None
        header_len = _core.peek_header(data)["header_len"]
        payload = data[header_len:]
        token = _secrets.token_hex(8)
        try:
            for s in range(self.shards):
                tag = self._bits_keys[s].rsplit(":", 1)[0]
                tmp = f"{tag}:merge:{token}"
                part = payload[s * self.shard_bytes:s * self.shard_bytes + self._lens[s]]
                pipe = self.client.pipeline(transaction=False)
                for off in range(0, len(part), _PIECE):
                    piece = part[off:off + _PIECE].tobytes()
                    if off == 0:
                        pipe.set(tmp, piece, px=600_000)
                    else:
                        pipe.setrange(tmp, off, piece)
                pipe.execute()
                try:
                    _MERGE.run(self.client, [self._bits_keys[s], self._hash_keys[s], tmp],
                               [self._gen, self._lens[s]])
                except ResponseError as exc:
                    self.client.delete(tmp)
                    raise _map_response_error(exc, self.name) from exc
        except (_RedisConnectionError, _RedisTimeoutError) as exc:
            raise RedisConnectionLost(
                f"connection to Redis failed during merge_from ({exc}); each shard is merged "
                "atomically or not at all; merging again is safe (OR is idempotent)"
            ) from exc

    def _check_compatible(self, local: Any, data: memoryview | None) -> None:
        if not isinstance(local, self._cls):
            raise IncompatibleFiltersError(
                f"cannot merge a {type(local).__name__} into a {self.layout} Redis filter "
                f"(needs a {self._cls.__name__})"
            )
        mine = (self.num_bits, self.num_hashes, self.seed, self.keyed, self.layout_version)
        theirs = (local.num_bits, local.num_hashes, local.seed, local.keyed,
                  local.layout_version)
        if mine != theirs:
            raise IncompatibleFiltersError(
                "filters differ: (num_bits, num_hashes, seed, keyed, layout_version) "
                f"{theirs} != {mine}"
            )
        # hash algorithm and secret: the header's key_check (0 when unkeyed)
        assert data is not None
        if _core.peek_header(data)["key_check"] != self._key_check:
            raise IncompatibleFiltersError("filters are keyed with different secrets")

    def __repr__(self) -> str:
        shards = f", shards={self.shards}" if self.shards > 1 else ""
        keyed = ", keyed" if self.keyed else ""
        return (
            f"RedisBloomFilter(name={self.name!r}, layout={self.layout!r}, "
            f"capacity={self.capacity}, error_rate={self.error_rate:g}, "
            f"num_bits={self.num_bits}, num_hashes={self.num_hashes}, seed={self.seed}"
            f"{shards}{keyed})"
        )


_SCRIPTS = {s.sha: s.body for s in (_MERGE, _CLAIM, _INIT_SHARD, _READ_SHARD)}
_BLOOM_SCRIPTS: dict[tuple[str, int], _Script] = {}


def _bloom_script(op: str, k: int) -> _Script:
    """The cached add / contains script for k probes (registered for NOSCRIPT)."""
    script = _BLOOM_SCRIPTS.get((op, k))
    if script is None:
        script = _BLOOM_SCRIPTS[(op, k)] = _Script(_bloom_script_body(op, k))
        _SCRIPTS[script.sha] = script.body
    return script


def _meta_key(name: str) -> str:
    return f"{{{name}}}:meta"


def _shard_keys(name: str, shards: int) -> tuple[list[str], list[str]]:
    if shards == 1:
        tags = [f"{{{name}}}"]
    else:
        tags = [f"{{{name}:{s}}}" for s in range(shards)]
    return [t + ":bits" for t in tags], [t + ":n" for t in tags]


def _text(v: Any) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, (bytes, bytearray)) else str(v)


def _expect(
    name: str,
    meta: dict[str, str],
    capacity: int | None,
    error_rate: float | None,
    layout: str | None,
    seed: int | None,
    shards: int | None,
) -> None:
    diffs: list[str] = []
    if layout is not None and layout != meta["layout"]:
        diffs.append(f"layout {meta['layout']!r} (expected {layout!r})")
    if seed is not None and seed != int(meta["seed"]) and seed % 2**64 != int(meta["seed"]):
        diffs.append(f"seed {meta['seed']} (expected {seed})")
    if shards is not None and shards != int(meta["shards"]):
        diffs.append(f"shards {meta['shards']} (expected {shards})")
    if capacity is not None or error_rate is not None:
        kind = layout or meta["layout"]
        stored_capacity, stored_rate = int(meta["capacity"]), float.fromhex(meta["error_rate"])
        want_capacity = capacity if capacity is not None else stored_capacity
        want_rate = error_rate if error_rate is not None else stored_rate
        d = design(
            want_capacity, want_rate, kind,
            # a filter is sized by its own version's model
            layout_version=int(meta.get("layout_version", "0")) if kind == "blocked" else None,
        )
        if (d.num_bits, d.num_hashes) != (int(meta["num_bits"]), int(meta["num_hashes"])):
            diffs.append(
                f"size {meta['num_bits']} bits, k={meta['num_hashes']} for "
                f"capacity={stored_capacity}, error_rate={stored_rate:g} (expected "
                f"{d.num_bits} bits, k={d.num_hashes} for capacity={want_capacity}, "
                f"error_rate={want_rate:g})"
            )
    if diffs:
        raise FilterMismatchError(f"filter {name!r} differs: " + "; ".join(diffs))



# ==== Counting Bloom filter and count-min sketch ===================================
#
# Same principle as RedisBloomFilter, unsharded: one string {name}:ctr holding
# the counters, one hash {name}:n holding gen and the header counters, the meta
# hash {name}:meta.  Positions come from an empty local structure of the same
# shape; Redis sees counter offsets only.  Counter widths and byte order:
#
#   counting u4: the local bytes as they are; our counter i is Redis `u4 #(i^1)`.
#   counting u8: the local bytes as they are; counter i is `u8 #i`.
#   counting u16, CMS u32: Redis BITFIELD integers are big-endian, the local
#       format little-endian, so the Redis string holds every counter in
#       BIG-endian order (counter i is `u16 #i` / `u32 #i`) and to_local /
#       merge_from swap the bytes of each counter.
#
# Every script checks gen and the exact length first (BKGONE), then does its
# first write only once it can no longer fail, so a refused call changes
# nothing.

_LUA_CCHECK = """
if redis.call('HGET', KEYS[2], 'gen') ~= ARGV[1]
   or redis.call('STRLEN', KEYS[1]) ~= tonumber(ARGV[2]) then
  return redis.error_reply('BKGONE bloomkit structure was deleted or replaced')
end
local k = tonumber(ARGV[3])
local T = ARGV[4]
"""

# counting add: ARGV[5] = offsets ('#j'), k per key.  One BITFIELD per key:
# OVERFLOW SAT then k INCRBY 1; a returned 1 is a counter that was 0 (SAT
# never yields 1 otherwise), so "was new" and the nonzero count are exact.
_LUA_CB_ADD = (
    _LUA_CCHECK
    + """
local args = {'OVERFLOW', 'SAT'}
for q = 1, k do args[4 * q - 1] = 'INCRBY'; args[4 * q] = T; args[4 * q + 2] = '1' end
local out = {}
local i = 0
local j = 0
local new = 0
local nz = 0
for o in string.gmatch(ARGV[5], '%S+') do
  i = i + 1
  args[4 * i + 1] = o
  if i == k then
    i = 0
    j = j + 1
    local v = redis.call('BITFIELD', KEYS[1], unpack(args))
    local was = '0'
    for q = 1, k do
      if v[q] == 1 then was = '1'; nz = nz + 1 end
    end
    if was == '1' then new = new + 1 end
    out[j] = was
  end
end
redis.call('HINCRBY', KEYS[2], 'count', j)
if new > 0 then
  redis.call('HINCRBY', KEYS[2], 'dc', new)
  redis.call('HINCRBY', KEYS[2], 'dd', new)
end
if nz > 0 then redis.call('HINCRBY', KEYS[2], 'nz', nz) end
return table.concat(out)
"""
)

# counting remove: ARGV[5] = counter max, ARGV[6] = offsets.  Keys in order;
# at the first key with a zero counter stop (that key and the rest untouched).
# Saturated counters are not decremented.  Returns {removed, stopped}.
_LUA_CB_REMOVE = (
    _LUA_CCHECK
    + """
local mx = tonumber(ARGV[5])
local gargs = {}
for q = 1, k do gargs[3 * q - 2] = 'GET'; gargs[3 * q - 1] = T end
local offs = {}
local i = 0
local removed = 0
local zeroed = 0
local nzdec = 0
local stopped = 0
for o in string.gmatch(ARGV[6], '%S+') do
  i = i + 1
  offs[i] = o
  gargs[3 * i] = o
  if i == k then
    i = 0
    local old = redis.call('BITFIELD_RO', KEYS[1], unpack(gargs))
    local absent = false
    for q = 1, k do
      if old[q] == 0 then absent = true; break end
    end
    if absent then stopped = 1; break end
    local dargs = {'OVERFLOW', 'SAT'}
    local dq = {}
    for q = 1, k do
      if old[q] ~= mx then
        local n = #dargs
        dargs[n + 1] = 'INCRBY'; dargs[n + 2] = T; dargs[n + 3] = offs[q]; dargs[n + 4] = '-1'
        dq[#dq + 1] = offs[q]
      end
    end
    if #dq > 0 then
      local v = redis.call('BITFIELD', KEYS[1], unpack(dargs))
      local seen = {}
      local z = false
      for q = 1, #dq do
        if v[q] == 0 then
          z = true
          if not seen[dq[q]] then seen[dq[q]] = true; nzdec = nzdec + 1 end
        end
      end
      if z then zeroed = zeroed + 1 end
    end
    removed = removed + 1
  end
end
if removed > 0 then
  local c = tonumber(redis.call('HGET', KEYS[2], 'count'))
  if c >= removed then
    redis.call('HINCRBY', KEYS[2], 'count', -removed)
  else
    redis.call('HSET', KEYS[2], 'count', 0)
  end
end
if zeroed > 0 then
  local dc = tonumber(redis.call('HGET', KEYS[2], 'dc'))
  redis.call('HSET', KEYS[2], 'dc', math.max(0, dc - zeroed))
  redis.call('HINCRBY', KEYS[2], 'dd', -zeroed)
end
if nzdec > 0 then redis.call('HINCRBY', KEYS[2], 'nz', -nzdec) end
return {removed, stopped}
"""
)

# counting count / CMS estimate: the minimum of each key's k counters.
_LUA_MIN = (
    _LUA_CCHECK
    + """
local args = {}
for q = 1, k do args[3 * q - 2] = 'GET'; args[3 * q - 1] = T end
local out = {}
local i = 0
local j = 0
for o in string.gmatch(ARGV[5], '%S+') do
  i = i + 1
  args[3 * i] = o
  if i == k then
    i = 0
    j = j + 1
    local v = redis.call('BITFIELD_RO', KEYS[1], unpack(args))
    local m = v[1]
    for q = 2, k do if v[q] < m then m = v[q] end end
    out[j] = m
  end
end
return out
"""
)

# merge (both structures): ARGV[5] = the field to add ARGV[6] to ('count' or
# 'total'), ARGV[7] = 'offset value' pairs of the local's nonzero counters.
# The HINCRBY comes first: if it would overflow int64 it fails before any
# counter changed.  Then GET+INCRBY (SAT) per counter: the saturating sum;
# the old values give the exact number of counters that became nonzero.
_LUA_MERGE_CTR = (
    _LUA_CCHECK
    + """
local ok = redis.pcall('HINCRBY', KEYS[2], ARGV[5], ARGV[6])
if type(ok) == 'table' and ok.err then
  return redis.error_reply('BKOVERFLOW ' .. ARGV[5] .. ' would exceed 2^63-1')
end
local args = {'OVERFLOW', 'SAT'}
local n = 2
local nzinc = 0
local function flush()
  if n > 2 then
    local r = redis.call('BITFIELD', KEYS[1], unpack(args, 1, n))
    for a = 1, #r, 2 do
      if r[a] == 0 then nzinc = nzinc + 1 end
    end
  end
  n = 2
end
for o, v in string.gmatch(ARGV[7], '(%S+) (%S+)') do
  args[n + 1] = 'GET'; args[n + 2] = T; args[n + 3] = o
  args[n + 4] = 'INCRBY'; args[n + 5] = T; args[n + 6] = o; args[n + 7] = v
  n = n + 7
  if n > 7000 then flush() end
end
flush()
if ARGV[5] == 'count' then
  local nz = redis.call('HINCRBY', KEYS[2], 'nz', nzinc)
  redis.call('HSET', KEYS[2], 'base', nz, 'dc', 0, 'dd', 0)
  return nz
end
return nzinc
"""
)

# CMS add: ARGV[5] = '1' conservative, ARGV[6] = counter max, ARGV[7] = the
# sum of the counts, ARGV[8] = per key: its count (already clamped to the
# counter max) then its d offsets.  total first (fails before any write),
# then per key ONE BITFIELD (plain: SAT INCRBY per row) or, conservative, a
# read and one BITFIELD SET of the rows below the new estimate.
_LUA_CMS_ADD = (
    _LUA_CCHECK
    + """
local ok = redis.pcall('HINCRBY', KEYS[2], 'total', ARGV[7])
if type(ok) == 'table' and ok.err then
  return redis.error_reply('BKOVERFLOW total would exceed 2^63-1')
end
local cons = ARGV[5] == '1'
local mx = tonumber(ARGV[6])
local out = {}
local args = {'OVERFLOW', 'SAT'}
local gargs = {}
for q = 1, k do
  args[4 * q - 1] = 'INCRBY'; args[4 * q] = T
  gargs[3 * q - 2] = 'GET'; gargs[3 * q - 1] = T
end
local offs = {}
local cnt = nil
local cs = nil
local i = 0
local j = 0
for o in string.gmatch(ARGV[8], '%S+') do
  if cnt == nil then
    cs = o
    cnt = tonumber(o)
  else
    i = i + 1
    offs[i] = o
    args[4 * i + 1] = o
    args[4 * i + 2] = cs
    gargs[3 * i] = o
    if i == k then
      i = 0
      j = j + 1
      if cons then
        local v = redis.call('BITFIELD', KEYS[1], unpack(gargs))
        local m = v[1]
        for q = 2, k do if v[q] < m then m = v[q] end end
        local target = math.min(m + cnt, mx)
        local sargs = {}
        for q = 1, k do
          if v[q] < target then
            local n = #sargs
            sargs[n + 1] = 'SET'; sargs[n + 2] = T; sargs[n + 3] = offs[q]
            sargs[n + 4] = string.format('%d', target)
          end
        end
        if #sargs > 0 then redis.call('BITFIELD', KEYS[1], unpack(sargs)) end
        out[j] = target
      else
        local v = redis.call('BITFIELD', KEYS[1], unpack(args))
        local m = v[1]
        for q = 2, k do if v[q] < m then m = v[q] end end
        out[j] = m
      end
      cnt = nil
    end
  end
end
return out
"""
)

_LUA_INIT_CTR = """
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SETRANGE', KEYS[1], tonumber(ARGV[2]) - 1, '\\0')
redis.call('HSET', KEYS[2], 'gen', ARGV[1], unpack(ARGV, 3))
return 1
"""

_CB_ADD = _Script(_LUA_CB_ADD)
_CB_REMOVE = _Script(_LUA_CB_REMOVE)
_MIN = _Script(_LUA_MIN)
_MERGE_CTR = _Script(_LUA_MERGE_CTR)
_CMS_ADD = _Script(_LUA_CMS_ADD)
_INIT_CTR = _Script(_LUA_INIT_CTR)
_SCRIPTS.update({s.sha: s.body for s in (_CB_ADD, _CB_REMOVE, _MIN, _MERGE_CTR, _CMS_ADD,
                                         _INIT_CTR)})

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


class _RedisCounters:
    """Shared machinery of RedisCountingBloomFilter and RedisCountMinSketch."""

    _structure: ClassVar[str] = ""
    _local_cls: ClassVar[type[Any]]
    _hash_fields: ClassVar[tuple[str, ...]] = ()
    #: keys per script call in the batch calls
    chunk_size: int = 1000
    #: script calls per pipeline round trip
    pipeline_depth: int = 8

    def __init__(self, client: Any, name: str, meta: dict[str, str], secret: bytes | None,
                 key: Any) -> None:
        """Use :meth:`create` or :meth:`open`."""
        self.client = client
        self.name = name
        self.seed = int(meta["seed"])
        self.keyed = meta["keyed"] == "1"
        self._key_check = int(meta["key_check"])
        self.payload_len = int(meta["payload_len"])
        self._gen = meta["gen"]
        self._secret = secret
        self._keyfunc = key
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
        _check_client(client)
        name = _check_name(name)
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
        meta_key = _meta_key(name)
        flat = [x for kv in meta.items() for x in kv]
        try:
            if not _CLAIM.run(client, [meta_key], flat):
                raise FilterExistsError(f"a Redis key {meta_key!r} already exists: "
                                        f"{name!r} exists (open it, or delete it first)")
            _INIT_CTR.run(client, [obj._ctr_key, obj._hash_key],
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
        _check_client(client)
        name = _check_name(name)
        meta_key = _meta_key(name)
        try:
            raw = client.hgetall(meta_key)
        except (_RedisConnectionError, _RedisTimeoutError) as exc:
            raise _wrap_connection_error(exc, f"open({name!r})") from exc
        except ResponseError as exc:
            raise FilterMismatchError(f"Redis key {meta_key!r} is not a bloomkit structure "
                                      f"({exc})") from exc
        if not raw:
            raise FilterNotFoundError(f"no bloomkit {cls._structure} {name!r} in Redis (key "
                                      f"{meta_key!r} does not exist)")
        meta = {_text(k): _text(v) for k, v in raw.items()}
        fmt = meta.get("format", "")
        if fmt != REDIS_FORMAT or meta.get("structure") != cls._structure:
            raise FilterMismatchError(
                f"Redis key {meta_key!r} does not hold a bloomkit {cls._structure} of "
                f"{REDIS_FORMAT!r} (format={fmt!r}, structure={meta.get('structure')!r})"
            )
        if meta.get("state") != "ready":
            raise RedisFilterError(
                f"{name!r} is being created or its creation was interrupted; "
                f"{cls.__name__}.delete_named(client, {name!r}) removes it"
            )
        if (meta.get("keyed") == "1") != (secret is not None):
            raise FilterMismatchError(
                f"{name!r} was created "
                + ("with a secret: pass secret=" if meta.get("keyed") == "1" else
                   "without a secret: do not pass secret=")
            )
        return meta

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
            raise _wrap_connection_error(exc, f"open({name!r})") from exc
        if length != obj.payload_len or gen is None or _text(gen) != obj._gen:
            raise FilterMismatchError(
                f"{name!r}: {obj._ctr_key!r} is missing, of the wrong size ({length} bytes, "
                f"expected {obj.payload_len}) or from another creation: it is damaged"
            )
        return obj

    @classmethod
    def delete_named(cls, client: Any, name: str) -> bool:
        """Delete ``name`` (complete or not); True if it existed."""
        name = _check_name(name)
        existed = bool(client.delete(_meta_key(name)))  # first: new opens fail from here on
        pipe = client.pipeline(transaction=False)
        pipe.delete(f"{{{name}}}:ctr")
        pipe.delete(f"{{{name}}}:n")
        return any(pipe.execute()) or existed

    def delete(self) -> bool:
        """Delete it from Redis (meta first, then the counters)."""
        return self.delete_named(self.client, self.name)

    # ---- calls -----------------------------------------------------------------------

    def _offsets(self, keys: list[object]) -> str:
        pos = self._proto._counter_positions
        off = self._offset
        return " ".join([off(i) for key in keys for i in pos(key)])

    def _argv(self, *extra: Any) -> list[Any]:
        return [self._gen, self.payload_len, self._k, self._type, *extra]

    def _keys(self) -> list[str]:
        return [self._ctr_key, self._hash_key]

    def _run(self, script: _Script, argv: list[Any], what: str, confirmed: int = 0) -> Any:
        return self._run_many(script, [argv], what, confirmed)[0]

    def _run_many(self, script: _Script, argvs: list[list[Any]], what: str,
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
            if script is _MIN:  # count/contains/estimate: nothing written
                raise _wrap_connection_error(exc, what) from exc
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
        return _map_response_error(exc, self.name)

    def _batched(self, script: _Script, keys: Iterable[object], what: str,
                 make: Any) -> Iterator[tuple[list[object], Any]]:
        depth = max(1, self.pipeline_depth)
        chunks: list[list[object]] = []
        confirmed = 0
        for chunk in _chunks(keys, max(1, self.chunk_size)):
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
        for _, r in self._batched(_MIN, keys, what, lambda c: self._argv(self._offsets(c))):
            out += [int(x) for x in r]
        return out

    def _hash_field(self, field: str) -> int:
        """One header counter, read with ``gen`` in one HMGET (atomic): a handle
        whose structure was deleted or re-created raises FilterNotFoundError."""
        gen, value = self.client.hmget(self._hash_key, "gen", field)
        if gen is None or _text(gen) != self._gen:
            raise FilterNotFoundError(
                f"Redis structure {self.name!r} was deleted or replaced while this handle was "
                "open"
            )
        return int(value or 0)

    def _read(self) -> tuple[bytes, list[Any]]:
        """The counters string and the hash fields, read in one MULTI."""
        pipe = self.client.pipeline(transaction=True)
        for off in range(0, self.payload_len, _PIECE):
            pipe.getrange(self._ctr_key, off, min(off + _PIECE, self.payload_len) - 1)
        pipe.hmget(self._hash_key, "gen", *self._hash_fields)
        try:
            res = pipe.execute()
        except (_RedisConnectionError, _RedisTimeoutError) as exc:
            raise _wrap_connection_error(exc, "to_local") from exc
        fields = res[-1]
        data = b"".join(res[:-1])
        if fields[0] is None or _text(fields[0]) != self._gen or len(data) != self.payload_len:
            raise FilterNotFoundError(
                f"Redis structure {self.name!r} was deleted or replaced while this handle was "
                "open"
            )
        return data, [int(v or 0) for v in fields[1:]]

    def _build_local(self, payload: bytes, patches: list[tuple[int, int]]) -> Any:
        data = bytearray(self._proto.to_bytes())
        header_len = _core.peek_header(data)["header_len"]
        data[header_len:] = payload
        for off, value in patches:
            struct.pack_into("<Q", data, off, value)
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
            ["count", 0, "nz", 0, "base", 0, "dc", 0, "dd", 0])
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
        return bool(self._run(_CB_ADD, self._argv(self._offsets([key])), "add") == b"1")

    def add_many(self, keys: Iterable[object]) -> int:
        """Add every key (chunked, pipelined); returns how many were new."""
        new = 0
        for _, r in self._batched(_CB_ADD, keys, "add_many",
                                  lambda c: self._argv(self._offsets(c))):
            new += r.count(b"1")
        return new

    def remove(self, key: object) -> None:
        """Decrement the key's counters; KeyError (and no change) if surely absent."""
        removed, _ = self._run(_CB_REMOVE, self._argv(self.counter_max,
                                                      self._offsets([key])), "remove")
        if not removed:
            raise KeyError(key)

    def discard(self, key: object) -> bool:
        """remove() without the KeyError; True if removed."""
        removed, _ = self._run(_CB_REMOVE, self._argv(self.counter_max,
                                                      self._offsets([key])), "discard")
        return bool(removed)

    def remove_many(self, keys: Iterable[object]) -> int:
        """Remove keys in order; KeyError at the first surely-absent one (the keys
        before it stay removed, it and the rest are untouched).  Chunks are sent
        one at a time, so nothing after a refused key runs."""
        total = 0
        for chunk in _chunks(keys, max(1, self.chunk_size)):
            removed, stopped = self._run(
                _CB_REMOVE, self._argv(self.counter_max, self._offsets(chunk)),
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
        return max(dc, _union_count(self.num_counters, self.num_hashes, base) + dd)

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
        self._run(_MERGE_CTR, self._argv("count", len(local), self._nonzero_pairs(payload)),
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
        obj: RedisCountMinSketch = cls._create(client, name, meta, secret, key, ["total", 0])
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
        return int(self._run(_CMS_ADD, self._add_argv([key], [c]), "add")[0])

    def add_many(self, keys: Iterable[object], counts: Iterable[int] | None = None) -> None:
        """Add every key (count 1, or the matching entry of ``counts``)."""
        if counts is None:
            pairs: Iterable[tuple[object, int]] = ((k, 1) for k in _chunks_flat(keys))
        else:
            ks, cs = list(_chunks_flat(keys)), [self._check_count(c) for c in counts]
            if len(ks) != len(cs):
                raise ValueError(f"keys and counts differ in length ({len(ks)} vs {len(cs)})")
            pairs = zip(ks, cs, strict=True)
        for _ in self._batched(_CMS_ADD, pairs, "add_many",
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
        self._run(_MERGE_CTR, self._argv("total", local.total, self._nonzero_pairs(payload)),
                  "merge_from")

    def __repr__(self) -> str:
        return (f"RedisCountMinSketch(name={self.name!r}, width={self.width}, "
                f"depth={self.depth}, seed={self.seed}"
                f"{', conservative=True' if self.conservative else ''}"
                f"{', keyed' if self.keyed else ''})")


def _chunks_flat(keys: Iterable[object]) -> Iterator[object]:
    for chunk in _chunks(keys, 4096):
        yield from chunk
