"""The raw-protocol read path of :class:`bloomkit.redis.RedisBloomFilter`.

``contains_many`` on a plain ``redis.Redis`` client sends hand-packed RESP:
one ``GETRANGE`` of the key's 64-byte block (blocked layout) or one
``BITFIELD_RO`` of its k bits (classic) per key, then each shard's
generation and length, and parses the fixed-form replies from the raw
bytes (docs/redis.md, "Throughput").  A mixin of RedisBloomFilter, which
builds the packing tables it reads (``_raw_heads``, ``_pack_first``, ...)
in ``__init__``.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

from ..design import BLOCK_BITS
from ._wire import ErrorReply, RawReader, chunked, raw_pipeline
from .errors import FilterNotFoundError, RedisFilterError, WrongTypeError

__all__ = ["RawContains"]


class RawContains:
    """The raw ``contains_many`` path (and the pipelining the add path shares)."""

    # set by RedisBloomFilter.__init__ (or its class body)
    client: Any
    name: str
    layout: str
    shards: int
    num_hashes: int
    chunk_size: int
    pipeline_depth: int
    _trips_ahead: int
    _gen: str
    _lens: list[int]
    _proto: Any
    _cls: type[Any]
    _secret: bytes | None
    _keyfunc: Any
    _raw_size: int
    _raw_lead: bytes
    _raw_pattern: re.Pattern[bytes]
    _raw_tail: str
    _num_blocks: int
    _blocks_per_shard: int
    _tiny_header: bytes
    _pack_first: list[list[str]]
    _pack_next: list[str]

    def _raw_pipeline(self, trips: Iterator[tuple[Any, int]],
                      send: Any, read: Any, what: str) -> Iterator[Any]:
        """_wire.raw_pipeline on this client, ``_trips_ahead`` trips ahead."""
        return raw_pipeline(self.client, trips, send, read, what, self._trips_ahead)

    def _contains_raw(self, keys: Iterable[object]) -> list[bool]:
        out: list[bool] = []
        per_trip = max(1, self.chunk_size) * max(1, self.pipeline_depth)
        trips = ((chunk, len(chunk)) for chunk in chunked(keys, per_trip))
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
        return self._read_contains(conn, RawReader(conn), chunk, deque())[0]

    def _read_contains(self, conn: Any, reader: RawReader, chunk: list[object],
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
        for r in tail:
            if isinstance(r, ErrorReply) and "WRONGTYPE" in r.text:
                raise WrongTypeError(f"Redis filter {self.name!r}: one of its keys holds "
                                     f"another Redis type (Redis said: {r.text})")
        for s in range(self.shards):
            if tail[2 * s] != gen or tail[2 * s + 1] != self._lens[s]:
                raise FilterNotFoundError(
                    f"Redis filter {self.name!r} was deleted or replaced while this handle "
                    "was open; open it again"
                )

    def _slow_replies(self, conn: Any, reader: RawReader, chunk: list[object]) -> list[bool]:
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
            if isinstance(r, ErrorReply):
                conn.disconnect()  # the caller's handler does too; never reuse it
                if "WRONGTYPE" in r.text:
                    raise WrongTypeError(f"Redis filter {self.name!r}: one of its keys holds "
                                         f"another Redis type (Redis said: {r.text})")
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
