"""Local copies of a :class:`bloomkit.redis.RedisBloomFilter`: ``to_local``
(each shard read atomically with its counter, the bytes of the local build)
and ``merge_from`` (a local filter ORed in, one atomic script a shard).
A mixin of RedisBloomFilter, which sets the attributes it reads in
``__init__``.
"""

from __future__ import annotations

import secrets as _secrets
from collections.abc import Callable
from typing import Any

from redis.exceptions import ConnectionError as _RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as _RedisTimeoutError

from .. import _core
from ..errors import IncompatibleFiltersError
from ._layout import HEADER_LEN, PIECE, as_text, header_of
from ._scripts import MERGE_SCRIPT, READ_SHARD
from ._wire import map_response_error, wrap_connection_error
from .errors import FilterNotFoundError, RedisConnectionLost

__all__ = ["LocalCopies"]


class LocalCopies:
    """``to_local`` and ``merge_from``."""

    # set by RedisBloomFilter.__init__
    client: Any
    name: str
    layout: str
    shards: int
    num_bits: int
    num_hashes: int
    capacity: int
    error_rate: float
    seed: int
    keyed: bool
    layout_version: int
    payload_len: int
    shard_bytes: int
    _kind: int
    _key_check: int
    _cluster: bool
    _gen: str
    _lens: list[int]
    _bits_keys: list[str]
    _hash_keys: list[str]
    _cls: type[Any]
    _secret: bytes | None
    _keyfunc: Any
    _count: Callable[[list[tuple[int, int]]], int]  # the count to_local stores

    def _read_shard(self, s: int, out: memoryview) -> tuple[int, int]:
        """Copy shard s into out, atomically with its counter (one MULTI)."""
        length = self._lens[s]
        if self._cluster:
            # One script instead of MULTI: cluster pipelines of redis-py < 6
            # refuse transactions; a script is atomic on every version.
            res = list(READ_SHARD.run(self.client, [self._bits_keys[s], self._hash_keys[s]],
                                       [length, PIECE]))
            res = [*res[3:], res[:3]]
        else:
            pipe = self.client.pipeline(transaction=True)
            for off in range(0, length, PIECE):
                pipe.getrange(self._bits_keys[s], off, min(off + PIECE, length) - 1)
            pipe.hmget(self._hash_keys[s], "gen", "adds", "base")
            res = pipe.execute()
        gen, adds, base = res[-1]
        if gen is None or as_text(gen) != self._gen:
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
        data = bytearray(HEADER_LEN + self.payload_len)
        view = memoryview(data)
        counts = []
        try:
            for s in range(self.shards):
                start = HEADER_LEN + s * self.shard_bytes
                counts.append(self._read_shard(s, view[start:start + self._lens[s]]))
        except (_RedisConnectionError, _RedisTimeoutError) as exc:
            raise wrap_connection_error(exc, "to_local") from exc
        count = self._count(counts)
        data[:HEADER_LEN] = header_of(
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
                for off in range(0, len(part), PIECE):
                    piece = part[off:off + PIECE].tobytes()
                    if off == 0:
                        pipe.set(tmp, piece, px=600_000)
                    else:
                        pipe.setrange(tmp, off, piece)
                pipe.execute()
                try:
                    MERGE_SCRIPT.run(self.client, [self._bits_keys[s], self._hash_keys[s], tmp],
                               [self._gen, self._lens[s]])
                except ResponseError as exc:
                    self.client.delete(tmp)
                    raise map_response_error(exc, self.name) from exc
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
