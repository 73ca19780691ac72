"""The client's side of RedisSlidingBloomFilter's scripts: the per-key
records (the key's Redis bit offset in every physical slice) and layout 0's
frozen-slice hints (_scripts_sliding.py, "Why hints"), a mixin of
:class:`bloomkit.redis.RedisSlidingBloomFilter` (sliding.py)."""

from __future__ import annotations

import struct
from typing import Any

from redis.exceptions import ConnectionError as _RedisConnectionError
from redis.exceptions import TimeoutError as _RedisTimeoutError

from ._layout import PIECE, as_text
from ._wire import wrap_connection_error
from .errors import FilterNotFoundError

_GAMMA = 0x9E3779B97F4A7C15  # BK_SLIDING_GAMMA

_np: Any
try:  # the batch positions are computed with numpy when it is installed
    import numpy

    _np = numpy
    # b"0000" .. b"9999" and b"  00" .. b"  99", 4 bytes as one uint32 (decimal_fields)
    _DIGITS4 = numpy.frombuffer(b"".join(b"%04d" % i for i in range(10_000)),
                                dtype=numpy.uint32)
    _SPACE2_DIGITS2 = numpy.frombuffer(b"".join(b"  %02d" % i for i in range(100)),
                                       dtype=numpy.uint32)
except ImportError:  # pragma: no cover - numpy is optional
    _np = None
HAVE_NUMPY = _np is not None



def _mix64(x: int) -> int:
    """bk_mix64 (the splitmix64 finalizer) of a Python int."""
    x &= 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return x ^ (x >> 31)


def _mix64_np(x: Any) -> Any:
    """bk_mix64 of a uint64 array (numpy wraps mod 2^64, as C)."""
    assert _np is not None
    np = _np
    x = x ^ (x >> np.uint64(30))
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


#: bk_sliding_lane_mul: M[p] = (mix64(p + 1) mod 2^32) | 1, p < 32
LANE_MUL = [(_mix64(p + 1) & 0xFFFFFFFF) | 1 for p in range(32)]
_LANE_MUL: Any = None if _np is None else _np.array(LANE_MUL, dtype=_np.uint64)


class SlidingRecords:
    """Records and hints; the attributes are RedisSlidingBloomFilter's."""

    client: Any
    name: str
    num_hashes: int
    generations: int
    num_slices: int
    slice_bits: int
    payload_len: int
    hint_bytes_per_key: int
    _gen: str
    _proto: Any
    _bits_key: str
    _hash_key: str
    _argv_head: list[Any]
    _fz: bytearray | None
    _fz_birth: list[int | None]
    _fz_epoch: str
    _fz_budget: int
    _g_seen: int | None
    layout_version: int

    def _init_records(self) -> None:
        m = self.slice_bits
        self._blocks = m // 32  # layout 1: B
        self._bases = [p * m for p in range(self.num_slices)]
        self._pack = struct.Struct(f"<{self.num_slices}I").pack
        if _np is not None:
            p1 = _np.arange(1, self.num_slices + 1, dtype=_np.uint64)
            self._gammas = p1 * _np.uint64(_GAMMA)  # wraps mod 2^64, as in C
            self._bases_np = _np.array(self._bases, dtype=_np.uint64)

    def _records(self, keys: list[object]) -> bytes:
        """Per key, its Redis bit offset in every physical slice (u32 LE);
        layout 1: its block's byte offset (u32 LE) and its bit in each of
        the S lanes (a byte each; _scripts_sliding.py, "Layout 1")."""
        if self.layout_version == 1:
            return self._records_blocked(keys)
        if _np is not None and len(keys) >= 16:
            return self._records_numpy(keys)
        pos = self._proto._slice_positions
        pack = self._pack
        bases = self._bases
        return b"".join([pack(*[(b + q) ^ 7 for b, q in zip(bases, pos(key), strict=True)])
                         for key in keys])

    def _records_numpy(self, keys: list[object]) -> bytes:
        """_records for a batch: bk_sliding_pos of every (key, slice) at once.

        pos(h, p) = mulhi(mix64(h + (p + 1) * GAMMA), m) in uint64 arithmetic
        (numpy wraps mod 2^64 like C); mulhi by m < 2^32 from 32-bit halves:
        (x m) >> 64 = ((x_hi m) + ((x_lo m) >> 32)) >> 32, no term overflows.
        tests/test_redis_sliding.py holds it to _slice_positions."""
        data: bytes = self._offsets_numpy(keys).astype("<u4").tobytes()
        return data

    def _records_blocked(self, keys: list[object]) -> bytes:
        """Layout 1's records: bk_sliding_block and bk_sliding_lane_pos.

        block(h) = mulhi(h, B) (from 32-bit halves, as _records_numpy);
        w = mix64(h + GAMMA); lane p's bit = ((x_p M[p]) mod 2^32) >> 27 with
        x_p the low (p < 16) or high 32 bits of w and M[p] =
        (mix64(p + 1) mod 2^32) | 1 (bk_sliding_lane_mul).  Held to
        _slice_positions by tests/test_redis_sliding.py."""
        S = self.num_slices
        if _np is None or len(keys) < 16:
            pos = self._proto._slice_positions
            out = []
            for key in keys:
                q = pos(key)  # block * 32 + the lane's bit, per lane
                out.append(struct.pack("<I", (q[0] >> 5) * 128) + bytes([x & 31 for x in q]))
            return b"".join(out)
        np = _np
        kh = self._proto._key_hash
        n = len(keys)
        h = np.fromiter((kh(key) for key in keys), dtype=np.uint64, count=n)
        lo32 = np.uint64(0xFFFFFFFF)
        B = np.uint64(self._blocks)
        blk = ((h >> np.uint64(32)) * B + (((h & lo32) * B) >> np.uint64(32))) >> np.uint64(32)
        w = _mix64_np(h + np.uint64(_GAMMA))
        x = np.empty((n, S), dtype=np.uint64)
        x[:, :16] = (w & lo32)[:, None]
        x[:, 16:] = (w >> np.uint64(32))[:, None]
        lanes = ((x * _LANE_MUL[None, :S]) & lo32) >> np.uint64(27)
        out = np.empty((n, 4 + S), dtype=np.uint8)
        out[:, :4] = (blk * np.uint64(128)).astype("<u4").view(np.uint8).reshape(n, 4)
        out[:, 4:] = lanes.astype(np.uint8)
        data: bytes = out.tobytes()
        return data

    def _offsets_numpy(self, keys: list[object]) -> Any:
        """The (len(keys), S) uint64 array of the Redis offsets _records packs."""
        assert _np is not None
        np = _np
        kh = self._proto._key_hash
        h = np.fromiter((kh(key) for key in keys), dtype=np.uint64, count=len(keys))
        x = h[:, None] + self._gammas[None, :]
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
        m = np.uint64(self.slice_bits)
        lo32 = np.uint64(0xFFFFFFFF)
        pos = ((x >> np.uint64(32)) * m + (((x & lo32) * m) >> np.uint64(32))) >> np.uint64(32)
        return (pos + self._bases_np[None, :]) ^ np.uint64(7)

    def _add_argv(self, keys: list[object], hg: int) -> list[Any]:
        """The add script's arguments: the records, and the hints of
        generation ``hg`` when this client holds its frozen slices (hg >= 0).
        Layout 1 reads a key's every slice in one block: no hints."""
        if self.layout_version == 1:
            return [*self._argv_head, self._records_blocked(keys)]
        if hg < 0 or _np is None or len(keys) < 16:
            return [*self._argv_head, self._records(keys), -1, b"", "0"]
        off = self._offsets_numpy(keys)
        return [*self._argv_head, off.astype("<u4").tobytes(), hg, self._hints(off, hg),
                self._fz_epoch]

    def _hints(self, off: Any, hg: int) -> bytes:
        """Per key: its offsets in the slices of ages 0 .. k-1 and S-1 at
        generation hg, then 100 c0 + c1 (_scripts_sliding.py, "Why hints"), as text."""
        assert _np is not None and self._fz is not None
        np = _np
        S, k, l = self.num_slices, self.num_hashes, self.generations  # noqa: E741
        o = off[:, [(hg - a) % S for a in range(k, S)]]  # ages k .. S-1 at hg
        fz = np.frombuffer(self._fz, dtype=np.uint8)
        bits = (fz[o >> np.uint64(3)] >> (7 - (o & np.uint64(7))).astype(np.uint8)) & 1
        # bit j of x: the key's bit at age k + j; bit j of y: ages k+j .. 2k-1+j all set
        x = np.packbits(bits, axis=1, bitorder="little")
        x = np.concatenate([x, np.zeros((len(x), 8 - x.shape[1]), np.uint8)], axis=1)
        x = x.view("<u8").ravel()
        y = x.copy()
        for i in range(1, k):
            y &= x >> np.uint64(i)
        f0 = y != 0
        f1 = (y & np.uint64((1 << max(0, l - k)) - 1)) != 0  # runs inside ages k .. S-2
        lead = np.log2(~x & (x + np.uint64(1))).astype(np.int64)  # trailing ones of x
        c0 = np.where(f0, k, np.minimum(lead, k - 1))
        c1 = np.where(f1, k, np.minimum(np.minimum(lead, l - 1), k - 1))
        young = off[:, [(hg - a) % S for a in range(k)] + [(hg + 1) % S]]
        codes = (c0 * 100 + c1).astype(np.uint64)
        return decimal_fields(np.concatenate([young, codes[:, None]], axis=1))

    def _hint_generation(self, nkeys: int) -> int:
        """The generation this client can send hints for (reading the frozen
        slices it lacks when ``nkeys`` more keys pay for them), or -1."""
        S, k = self.num_slices, self.num_hashes
        if self.layout_version == 1:
            return -1
        if _np is None or k + 2 > 32 or self.generations > 56:
            return -1  # Lua 5.1 patterns take 32 captures; _hints packs l bits in a u64
        self._fz_budget = min(self._fz_budget + nkeys * self.hint_bytes_per_key,
                              2 * self.payload_len)
        g = self._g_seen
        for _ in range(3):  # the server moves on while we read: try again
            if g is None:
                need = list(range(S))
            else:
                need = [p for p, b in (((g - a) % S, g - a) for a in range(k, S))
                        if self._fz_birth[p] != b]
                if not need:
                    return g
            cost = len(need) * (self.slice_bits // 8)
            if cost > self._fz_budget:
                return -1
            self._fz_budget -= cost
            g = self._read_slices(need)
        return -1

    def _read_slices(self, slices: list[int]) -> int:
        """Copy physical ``slices`` into the client's copy (one MULTI with
        the generation counter); those of age >= k then are final.  Returns
        the server's generation."""
        if self._fz is None:
            self._fz = bytearray(self.payload_len)
        size = self.slice_bits // 8
        pipe = self.client.pipeline(transaction=True)
        pipe.hmget(self._hash_key, "gen", "g", "clears")
        spans = []
        for p in slices:
            for off in range(p * size, (p + 1) * size, PIECE):
                end = min(off + PIECE, (p + 1) * size)
                pipe.getrange(self._bits_key, off, end - 1)
                spans.append((off, end))
        try:
            res = pipe.execute()
        except (_RedisConnectionError, _RedisTimeoutError) as exc:
            raise wrap_connection_error(exc, "add_many") from exc
        gen, g_text, clears = res[0]
        if gen is None or as_text(gen) != self._gen or g_text is None:
            raise FilterNotFoundError(
                f"Redis filter {self.name!r} was deleted or replaced while this handle was "
                "open; open it again"
            )
        for (off, end), piece in zip(spans, res[1:], strict=True):
            if len(piece) != end - off:
                raise FilterNotFoundError(f"Redis filter {self.name!r} was deleted or "
                                          "replaced while this handle was open; open it again")
            self._fz[off:end] = piece
        g = int(g_text)
        S, k = self.num_slices, self.num_hashes
        epoch = as_text(clears) if clears is not None else "0"
        if epoch != self._fz_epoch:  # cleared since: the copies held are of another ring
            self._fz_birth = [None] * S
            self._fz_epoch = epoch
        for p in slices:
            age = (g - p) % S
            self._fz_birth[p] = g - age if age >= k else None
        self._g_seen = g
        return g

    def _see_clears(self, clears: Any) -> None:
        """The server's ``clears`` counter: when it moved, the frozen copies
        held are of a ring before a clear(), read them again."""
        if as_text(clears) != self._fz_epoch:
            self._fz_birth = [None] * self.num_slices


def decimal_fields(values: Any) -> bytes:
    """Numbers below 10^10 as text, 12 bytes each: two spaces, then 10
    digits with leading zeros (the script's pattern `` +0*(%d+)`` drops
    them: Redis reads offsets with string2ll, which refuses them).
    Vectorised through tables of 4-byte groups read as uint32: a str() per
    number costs the client more than the hints save the server."""
    assert _np is not None
    np = _np
    x = values.astype(np.int64)
    hi = x // 100_000_000
    rest = x - hi * 100_000_000
    mid = rest // 10_000
    out = np.empty((*values.shape, 3), dtype=np.uint32)
    out[..., 0] = _SPACE2_DIGITS2[hi]
    out[..., 1] = _DIGITS4[mid]
    out[..., 2] = _DIGITS4[rest - mid * 10_000]
    data: bytes = out.tobytes()
    return data


