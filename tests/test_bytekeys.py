"""bloomkit._core.ByteKeys (py_bytekeys.c): variable-length byte keys in
Arrow's offsets + data layout hash exactly as the bytes objects (and so as
the strs whose UTF-8 they are) on every structure's batch path; bad offsets
are refused up front (R20), and nothing a caller does to its buffers later
can move a key out of bounds."""

from __future__ import annotations

import random
from typing import Any

import pytest

from bloomkit import (
    BlockedBloomFilter,
    BloomFilter,
    CountingBloomFilter,
    CountMinSketch,
    CuckooFilter,
    QuotientFilter,
    ScalableBloomFilter,
    TinyLFU,
)
from bloomkit._core import ByteKeys

np = pytest.importorskip("numpy")


def _pack(keys: list[bytes], dtype: str = "int32") -> tuple[Any, bytes]:
    offsets = np.zeros(len(keys) + 1, dtype=dtype)
    offsets[1:] = np.cumsum([len(k) for k in keys]) if keys else []
    return offsets, b"".join(keys)


def _random_keys(rng: random.Random, n: int) -> list[bytes]:
    # empty keys, NULs anywhere (also trailing: kept, unlike numpy's S dtype), UTF-8
    pool = [b"", b"\x00", b"a\x00", "é€".encode()]
    return [rng.choice(pool) if rng.random() < 0.1
            else rng.randbytes(rng.randrange(0, 40)) for _ in range(n)]


class ByteKeysEncodingTests:
    @pytest.mark.parametrize("dtype", ["int32", "int64"])
    def test_same_keys_as_the_bytes_objects(self, rng: random.Random, dtype: str) -> None:
        keys = _random_keys(rng, 5000)  # several 1024-key chunks
        bk = ByteKeys(*_pack(keys, dtype))
        assert len(bk) == len(keys) and list(bk) == keys
        f, g = BlockedBloomFilter(len(keys)), BlockedBloomFilter(len(keys))
        f.add_many(bk)
        g.add_many(keys)
        assert f.to_bytes() == g.to_bytes()
        probes = ByteKeys(*_pack(keys[:100] + _random_keys(rng, 100), dtype))
        assert f.contains_many(probes).tolist() == g.contains_many(list(probes))

    def test_strs_are_their_utf8(self) -> None:
        words = ["apple", "", "é€", "naïve"]
        f, g = BloomFilter(100), BloomFilter(100)
        f.add_many(ByteKeys(*_pack([w.encode() for w in words])))
        g.add_many(words)
        assert f.to_bytes() == g.to_bytes() and all(w in f for w in words)

    def test_a_window_of_the_data(self) -> None:
        # Arrow slices: offsets need not start at 0; bytes before/after are not keys
        bk = ByteKeys(np.array([3, 5, 5, 8], dtype=np.int64), b"xxxabcdefyyy")
        assert list(bk) == [b"ab", b"", b"cde"]

    @pytest.mark.parametrize("cls, kwargs", [
        (BloomFilter, {"capacity": 500}),
        (CountingBloomFilter, {"capacity": 500}),
        (ScalableBloomFilter, {"initial_capacity": 50}),
        (CuckooFilter, {"capacity": 500}),
        (QuotientFilter, {"capacity": 500}),
        (CountMinSketch, {"width": 200, "depth": 4}),
    ])
    def test_every_structure(self, rng: random.Random, cls: type[Any],
                             kwargs: dict[str, Any]) -> None:
        keys = list(dict.fromkeys(_random_keys(rng, 400)))
        a, b = cls(**kwargs), cls(**kwargs)
        a.add_many(ByteKeys(*_pack(keys)))
        b.add_many(keys)
        assert a.to_bytes() == b.to_bytes()

    def test_count_min_with_counts(self) -> None:
        a, b = CountMinSketch(width=100, depth=3), CountMinSketch(width=100, depth=3)
        a.add_many(ByteKeys(*_pack([b"x", b"y", b"x"])), counts=[2, 5, 1])
        b.add_many([b"x", b"y", b"x"], counts=[2, 5, 1])
        assert a.to_bytes() == b.to_bytes() and a.estimate(b"x") >= 3
        with pytest.raises(ValueError, match="differ in length"):
            a.add_many(ByteKeys(*_pack([b"x"])), counts=[1, 2])

    def test_tinylfu_records(self, rng: random.Random) -> None:
        keys = _random_keys(rng, 300)
        a, b = TinyLFU(1000), TinyLFU(1000)
        a.record_many(ByteKeys(*_pack(keys)))
        b.record_many(keys)
        assert a.to_bytes() == b.to_bytes()

    def test_key_function_sees_bytes_objects(self) -> None:
        seen: list[object] = []

        def key(k: object) -> object:
            seen.append(k)
            return k

        f = BloomFilter(10, key=key)
        f.add_many(ByteKeys(*_pack([b"a", b"bc"])))
        assert seen == [b"a", b"bc"] and b"bc" in f


class ByteKeysValidationTests:
    @pytest.mark.parametrize("offsets, data, message", [
        (np.array([0, 2, 1], dtype=np.int32), b"abc", r"non-decreasing.*offsets\[2\] = 1"),
        (np.array([0, 4], dtype=np.int32), b"abc", r"3 bytes: offsets\[1\] = 4"),
        (np.array([-1, 2], dtype=np.int64), b"abc", r"offsets\[0\] = -1"),
        (np.array([0, 2**40], dtype=np.int64), b"abc", r"offsets\[1\]"),
    ])
    def test_bad_offsets(self, offsets: Any, data: bytes, message: str) -> None:
        with pytest.raises(ValueError, match=message):
            ByteKeys(offsets, data)

    @pytest.mark.parametrize("offsets", [
        np.zeros(0, dtype=np.int32),            # not even the first offset
        np.zeros((2, 2), dtype=np.int32),       # 2-d
        np.zeros(3, dtype=np.float64),
        np.zeros(3, dtype=np.uint32),
        np.zeros(3, dtype=">i8"),               # not native order
        np.zeros(3, dtype=np.int16),
        b"\x00\x00\x00\x00",                    # bytes: format 'B'
    ])
    def test_bad_offset_types(self, offsets: Any) -> None:
        with pytest.raises(TypeError, match="ByteKeys offsets must be"):
            ByteKeys(offsets, b"")

    def test_bad_data(self) -> None:
        with pytest.raises(TypeError, match="not str"):
            ByteKeys(np.zeros(1, dtype=np.int32), "abc")
        with pytest.raises(TypeError):
            ByteKeys(np.zeros(1, dtype=np.int32), 12)

    def test_no_keys(self) -> None:
        bk = ByteKeys(np.zeros(1, dtype=np.int32), b"")
        f = BloomFilter(10)
        assert len(bk) == 0 and f.add_many(bk) == 0 and len(f.contains_many(bk)) == 0

    def test_offsets_are_copied_and_data_is_pinned(self) -> None:
        """Changing the offsets array afterwards changes nothing (it could
        otherwise point the GIL-free loop past the data); the data's
        exporter cannot be resized while a ByteKeys holds it."""
        offsets = np.array([0, 1, 3], dtype=np.int64)
        data = bytearray(b"abc")
        bk = ByteKeys(offsets, data)
        offsets[2] = 10**12
        assert list(bk) == [b"a", b"bc"]
        with pytest.raises(BufferError):
            data.extend(b"more")
        del bk
        data.extend(b"more")  # released
        with pytest.raises(IndexError):
            ByteKeys(offsets[:2], data)[1]
