"""How a structure is laid out in Redis: format names, key names, the local header.

Every structure keeps a meta hash ``{name}:meta`` (its parameters, ``format``,
``structure``, ``gen``, ``state``), its state string(s) and a small hash of
counters, all under the hash tag ``{name}`` (``{name:s}`` per shard) so a
structure's keys share a cluster slot.  The helpers here name those keys,
check what a caller passes before anything is written, and build the
128-byte header of kinds 1 and 2 that ``to_local`` puts before the bytes
read from Redis.
"""

from __future__ import annotations

import math
from typing import Any

import redis.cluster
from redis.exceptions import ConnectionError as _RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as _RedisTimeoutError

from .. import _core, _descriptor
from ..design import BLOCK_BITS, blocked_estimate_count, design
from ._wire import wrap_connection_error
from .errors import FilterMismatchError, FilterNotFoundError, RedisFilterError, WrongTypeError

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

# header_len and params_len of kinds 1 and 2, from their descriptor (bk_kind.h)
HEADER_LEN: int = _core.KINDS["BloomFilter"].header_len
_PARAMS_LEN: int = _core.KINDS["BloomFilter"].params_len
PIECE = 16 * 1024 * 1024  # bytes per GETRANGE / SETRANGE when moving whole shards


def _round_half_away(x: float) -> int:
    """C ``llround`` for x >= 0 (Python's round() rounds half to even)."""
    i = math.floor(x)
    return i + 1 if x - i >= 0.5 else i


def union_count(num_bits: int, k: int, popcount: int, blocked: bool = False) -> int:
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


def check_name(name: object) -> str:
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, not {type(name).__name__}")
    if not name or len(name) > 512 or "{" in name or "}" in name:
        raise ValueError("name must be 1..512 characters without '{' or '}' (hash tags)")
    return name


def check_client(client: Any) -> None:
    kwargs: dict[str, Any] = {}
    getter = getattr(client, "get_connection_kwargs", None)
    if getter is not None:
        kwargs = getter()
    if kwargs.get("decode_responses"):
        raise ValueError(
            "the Redis client must be created with decode_responses=False (the filter "
            "reads binary strings)"
        )


def is_cluster(client: Any) -> bool:
    return isinstance(client, redis.cluster.RedisCluster)


def header_of(
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
    """The 128-byte header of kinds 1 and 2 (docs/bloom.md "File layout"), checksum left 0.

    The fixed 64 bytes come from bk_format_init_header (the one writer of a
    header, issue #24); only the Bloom params that a Redis structure keeps
    in its meta hash are packed here, in bk_bloom.h's order."""
    h = bytearray(HEADER_LEN)
    _core.init_header(h, kind, HEADER_LEN, _PARAMS_LEN, payload_len, seed,
                      key_check if keyed else None)
    _descriptor.pack_params(_core.KINDS["BloomFilter"], h, num_bits=num_bits,
                            num_hashes=num_hashes, layout_version=layout_version,
                            capacity=capacity, error_rate=error_rate, count=count)
    return h


def meta_key_of(name: str) -> str:
    return f"{{{name}}}:meta"


def shard_key_names(name: str, shards: int) -> tuple[list[str], list[str]]:
    if shards == 1:
        tags = [f"{{{name}}}"]
    else:
        tags = [f"{{{name}:{s}}}" for s in range(shards)]
    return [t + ":bits" for t in tags], [t + ":n" for t in tags]


def as_text(v: Any) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, (bytes, bytearray)) else str(v)


def expect_params(
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


def read_meta(client: Any, name: str, structure: str, owner: str,
               secret: bytes | None, *, formats: tuple[str, ...] = (REDIS_FORMAT,),
               noun: str | None = None) -> dict[str, str]:
    """The meta hash of the ready ``structure`` called ``name``, checked
    (one of ``formats``, structure, creation finished, secret given iff
    keyed).  ``noun`` names the structure in messages (default: its name)."""
    noun = noun or structure
    check_client(client)
    name = check_name(name)
    meta_key = meta_key_of(name)
    try:
        raw = client.hgetall(meta_key)
    except (_RedisConnectionError, _RedisTimeoutError) as exc:
        raise wrap_connection_error(exc, f"open({name!r})") from exc
    except ResponseError as exc:
        if "WRONGTYPE" in str(exc):
            raise WrongTypeError(f"Redis key {meta_key!r} is not a bloomkit structure: it "
                                 f"holds another Redis type ({exc})") from exc
        raise FilterMismatchError(f"Redis key {meta_key!r} is not a bloomkit structure "
                                  f"({exc})") from exc
    if not raw:
        raise FilterNotFoundError(f"no bloomkit {noun} {name!r} in Redis (key "
                                  f"{meta_key!r} does not exist)")
    meta = {as_text(k): as_text(v) for k, v in raw.items()}
    fmt = meta.get("format", "")
    if not fmt.startswith("bloomkit-redis/") or meta.get("structure") != structure:
        raise FilterMismatchError(
            f"Redis key {meta_key!r} does not hold a bloomkit {noun} "
            f"(format={fmt!r}, structure={meta.get('structure')!r})"
        )
    if fmt not in formats:
        raise FilterMismatchError(
            f"{name!r} uses Redis layout {fmt!r}; this bloomkit reads "
            + " and ".join(repr(f) for f in formats)
        )
    if meta.get("state") != "ready":
        raise RedisFilterError(
            f"{name!r} is being created or its creation was interrupted; "
            f"{owner}.delete_named(client, {name!r}) removes it"
        )
    if (meta.get("keyed") == "1") != (secret is not None):
        raise FilterMismatchError(
            f"{name!r} was created "
            + ("with a secret: pass secret=" if meta.get("keyed") == "1" else
               "without a secret: do not pass secret=")
        )
    return meta


class MetaHandle:
    """What the handles of the unsharded structures (counters, sliding) read
    from their meta hash alike: name, hashing (seed, keyed, key_check, the
    secret and key function given to open), payload length, creation id;
    and the batch settings they share."""

    #: keys per script call in the batch calls
    chunk_size: int = 500
    #: script calls per pipeline round trip
    pipeline_depth: int = 8

    def __init__(self, client: Any, name: str, meta: dict[str, str], secret: bytes | None,
                 key: Any) -> None:
        self.client = client
        self.name = name
        self.seed = int(meta["seed"])
        self.keyed = meta["keyed"] == "1"
        self._key_check = int(meta["key_check"])
        self.payload_len = int(meta["payload_len"])
        self._gen = meta["gen"]
        self._secret = secret
        self._keyfunc = key

    def _check_payload(self, data_key: str, length: Any, gen: Any) -> None:
        """Refuse a handle whose payload key (``STRLEN`` ``length``) or
        creation id (``gen`` from the meta hash) does not match the meta."""
        if length != self.payload_len or gen is None or as_text(gen) != self._gen:
            raise FilterMismatchError(
                f"{self.name!r}: {data_key!r} is missing, of the wrong size ({length} bytes, "
                f"expected {self.payload_len}) or from another creation: it is damaged"
            )
