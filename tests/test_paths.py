"""Every code path sets and tests identical bits for identical keys.

The fast paths (inline key hashes, the branch-free and AVX2 blocked probes, the batch
loops over lists, iterators and numpy buffers, atomic and plain writes) must agree bit
for bit with each other and with the reference hash (the xxhash package), because the
bits are the file format.  ``BloomBase._simd(False)`` forces the scalar reference paths.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator

import numpy as np
import pytest
import xxhash

from bloomkit import BlockedBloomFilter, BloomFilter, _core


class BlockedV0(BlockedBloomFilter):
    """Blocked layout version 0 (the files written before version 1): every path
    must keep computing its positions too."""

    __slots__ = ()

    def __new__(cls, *args: object, **kwargs: object) -> BlockedV0:
        kwargs.setdefault("layout_version", 0)
        obj: BlockedV0 = super().__new__(cls, *args, **kwargs)  # type: ignore[arg-type]
        return obj


CLASSES = [BloomFilter, BlockedBloomFilter, BlockedV0]
INT_DOMAIN = 0x696E74656765722E
# What this CPU and build can run (BLOOMKIT_NO_SIMD only sets the starting state).
_SIMD_AT_START = _core.BloomBase._simd()
SIMD_SUPPORTED = _core.BloomBase._simd(True)
_core.BloomBase._simd(_SIMD_AT_START)


@pytest.fixture(autouse=True)
def _restore_simd() -> Iterator[None]:
    before = _core.BloomBase._simd()
    yield
    _core.BloomBase._simd(before)


def _int_key_bytes(v: int) -> bytes:
    if -(2**63) <= v < 2**63:
        return v.to_bytes(8, "little", signed=True)
    n = max(9, (v.bit_length() + 1 + 7) // 8)
    return v.to_bytes(n, "little", signed=True)


def _payload(f: BloomFilter) -> bytes:
    return f.to_bytes()[128:]


def _bits_set(f: BloomFilter) -> set[int]:
    data = np.frombuffer(_payload(f), dtype=np.uint8)
    return set(np.flatnonzero(np.unpackbits(data, bitorder="little")).tolist())


# Around every digit-count boundary of CPython's 30-bit digits (1, 2 and 3 digits are
# read inline, 3 only below 2**63) and the int64 range.
EDGE_INTS = [0, 1, -1, 2, 2**15, 2**30 - 1, 2**30, -(2**30), -(2**30) + 1, 2**31, 2**32 + 5,
             2**60 - 1, -(2**60) + 1, 2**60, -(2**60), 2**61 + 3, -(2**61) - 3, 2**62, 2**62 - 1,
             -(2**62), 7 * 2**60 + 12345, -(7 * 2**60) - 1, 2**63 - 1, -(2**63) + 1, -(2**63),
             2**63, 2**64 - 1, 2**64, -(2**63) - 1, 2**90 - 1, 2**90, 2**100, -(2**100), True,
             False]


class KeyHashTests:
    @pytest.mark.parametrize("seed", [0, 1, 0xDEADBEEF, 2**64 - 1])
    def test_bytes_and_str_match_xxh3_for_every_length(self, seed: int,
                                                       rng: random.Random) -> None:
        f = BlockedBloomFilter(100, 0.01, seed=seed)
        for n in range(0, 301):
            data = bytes(rng.randrange(256) for _ in range(n))
            want = xxhash.xxh3_64_intdigest(data, seed=seed)
            assert f._key_hash(data) == want, n
            text = "".join(chr(rng.randrange(32, 127)) for _ in range(n))
            assert f._key_hash(text) == xxhash.xxh3_64_intdigest(text.encode(), seed=seed), n

    @pytest.mark.parametrize("seed", [0, 7, 2**64 - 1])
    def test_ints_match_xxh3_in_their_domain(self, seed: int, rng: random.Random) -> None:
        f = BloomFilter(100, 0.01, seed=seed)
        values = EDGE_INTS + [rng.randrange(-(2**64), 2**64) for _ in range(2000)]
        for v in values:
            want = xxhash.xxh3_64_intdigest(_int_key_bytes(int(v)), seed=seed ^ INT_DOMAIN)
            assert f._key_hash(v) == want, v

    def test_numpy_arrays_hash_like_python_ints(self, rng: random.Random) -> None:
        vals = [rng.randrange(-(2**63), 2**63) for _ in range(3000)] + [0, -1, 2**63 - 1]
        for cls in CLASSES:
            a, b = cls(5000, 0.01, seed=3), cls(5000, 0.01, seed=3)
            a.add_many(np.array(vals, dtype=np.int64))
            b.add_many(vals)
            assert a == b
            u = [v % 2**64 for v in vals]
            c, d = cls(5000, 0.01, seed=3), cls(5000, 0.01, seed=3)
            c.add_many(np.array(u, dtype=np.uint64))
            d.add_many(u)
            assert c == d

    def test_list_batches_hash_edge_ints_like_single_keys(self) -> None:
        # The list loop reads ints inline, the per-item path too, and numpy goes through
        # the buffer: all three agree on every boundary value (in both signs).
        values = [int(v) for v in EDGE_INTS] + [-int(v) for v in EDGE_INTS]
        for cls in CLASSES:
            one, many = cls(1000, 0.01, seed=9), cls(1000, 0.01, seed=9)
            for v in values:
                one.add(v)
            many.add_many(values)
            assert one == many
            assert many.contains_many(values) == [True] * len(values)
            small = [v for v in values if -(2**63) <= v < 2**63]
            assert many.contains_many(np.array(small, dtype=np.int64)).all()


def _keys(rng: random.Random, n: int) -> list[object]:
    out: list[object] = []
    for i in range(n):
        r = i % 5
        if r == 0:
            out.append(rng.randrange(-(2**62), 2**62))
        elif r == 1:
            out.append(f"k{rng.randrange(10**12)}-{'x' * rng.randrange(40)}")
        elif r == 2:
            out.append(rng.randbytes(rng.randrange(0, 30)))
        elif r == 3:
            out.append(rng.randrange(2**64, 2**70))
        else:
            out.append("ключ-" + str(i))
    return out


@pytest.mark.parametrize("version", [0, 1])
@pytest.mark.parametrize("k", [1, 3, 4, 5, 8, 9, 12, 13, 16, 17, 23, 24])
def test_blocked_paths_for_every_probe_group_shape(version: int, k: int,
                                                   rng: random.Random) -> None:
    # The AVX2 paths take the probes 8 at a time (version 1: 4 per stream
    # word); every k around those boundaries sets the bits _bit_positions names
    # (which test_probes.py checks against docs/bloom.md, "File layout"), per item and in
    # batches, on both paths.
    keys = _keys(rng, 200)
    ref = BlockedBloomFilter.with_size(512 * 37, k, seed=3, layout_version=version)
    want = {q for key in keys for q in ref._bit_positions(key)}
    for simd in (False, True):
        _core.BloomBase._simd(simd)
        for batch in (False, True):
            g = BlockedBloomFilter.with_size(512 * 37, k, seed=3, layout_version=version)
            if batch:
                g.add_many(keys)
            else:
                for key in keys:
                    g.add(key)
            assert _bits_set(g) == want, (simd, batch)
            assert all(g.contains_many(keys)) and all(key in g for key in keys)
            others = _keys(rng, 300)
            expect = [set(g._bit_positions(o)) <= want for o in others]
            assert list(g.contains_many(others)) == expect
            # batches shorter and longer than the query's prefetch ring (32)
            for m in (0, 1, 31, 32, 33, 65):
                assert list(g.contains_many(others[:m])) == expect[:m], m


class WritePathTests:
    @pytest.mark.parametrize("cls", CLASSES)
    @pytest.mark.parametrize("k_rate", [0.5, 0.01, 1e-6])
    def test_every_add_path_sets_identical_bits(self, cls: type[BloomFilter], k_rate: float,
                                                rng: random.Random) -> None:
        keys = _keys(rng, 4000)
        ints = np.array([rng.randrange(-(2**63), 2**63) for _ in range(4000)], dtype=np.int64)
        built = []
        for simd in (False, True):
            _core.BloomBase._simd(simd)
            per_item = cls(3000, k_rate, seed=11)
            for k in keys:
                per_item.add(k)
            for v in ints.tolist():
                per_item.add(v)
            batch = cls(3000, k_rate, seed=11)
            batch.add_many(keys)
            batch.add_many(ints)
            gen = cls(3000, k_rate, seed=11)
            gen.add_many(k for k in keys)
            gen.add_many(iter(ints.tolist()))
            # a shared (atomic) in-place filter over a writable buffer
            shared_buf = bytearray(cls(3000, k_rate, seed=11).to_bytes())
            shared = cls._from_buffer(shared_buf, writable=True, shared=True)
            shared.add_many(keys)
            for v in ints.tolist():
                shared.add(v)
            built += [per_item, batch, gen]
            built.append(cls.from_bytes(shared.to_bytes()))
        payloads = {_payload(f) for f in built}
        assert len(payloads) == 1
        # ... and they are exactly the bits the layout defines (_bit_positions).
        want: set[int] = set()
        for k in [*keys, *ints.tolist()]:
            want.update(built[0]._bit_positions(k))
        assert _bits_set(built[0]) == want


class QueryPathTests:
    @pytest.mark.parametrize("cls", CLASSES)
    @pytest.mark.parametrize("rate", [0.3, 0.01, 1e-5])
    def test_every_query_path_gives_identical_answers(self, cls: type[BloomFilter],
                                                      rate: float,
                                                      rng: random.Random) -> None:
        members = _keys(rng, 3000)
        f = cls(3000, rate, seed=5)
        f.add_many(members)
        probes = members + _keys(rng, 6000)
        arr = np.array([rng.randrange(-(2**63), 2**63) for _ in range(5000)], dtype=np.int64)
        f.add_many(arr[:1000])
        answers = []
        for simd in (False, True):
            _core.BloomBase._simd(simd)
            answers.append([p in f for p in probes])
            answers.append(list(f.contains_many(probes)))
            answers.append([bool(v in f) for v in arr.tolist()])
            answers.append(f.contains_many(arr).tolist())
        key_answers = [answers[i] for i in (0, 1, 4, 5)]
        int_answers = [answers[i] for i in (2, 3, 6, 7)]
        ref_keys = key_answers[0]
        assert all(a == ref_keys for a in key_answers), "key paths differ"
        assert all(a == int_answers[0] for a in int_answers), "int paths differ"
        assert all(ref_keys[: len(members)])
        assert all(int_answers[0][:1000])
        # the reference: a key is present iff all of its bits are set
        bits = _bits_set(f)
        assert ref_keys == [set(f._bit_positions(p)) <= bits for p in probes]

    def test_simd_switch(self) -> None:
        assert _core.BloomBase._simd(False) is False
        assert _core.BloomBase._simd(True) is SIMD_SUPPORTED
        assert _core.BloomBase._simd() is SIMD_SUPPORTED
        with pytest.raises(TypeError):
            _core.BloomBase._simd(True, False)  # type: ignore[call-arg]


# ---- R3 on every path --------------------------------------------------------------


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("p", [0.01, 0.001])
@pytest.mark.parametrize("simd", [False, True])
def test_false_positive_bound_on_every_path(cls: type[BloomFilter], p: float,
                                            simd: bool) -> None:
    _core.BloomBase._simd(simd)
    n = 100_000
    gen = np.random.default_rng(int(1 / p) + simd)
    keys = gen.integers(0, 2**62, n, dtype=np.int64)
    f = cls(n, p, seed=1)
    f.add_many(keys)
    probes = gen.integers(2**62, 2**63 - 1, int(max(400_000, 200 / p)), dtype=np.int64)
    bound = 1.05 * p + 5 * math.sqrt(p / len(probes))
    batch = int(f.contains_many(probes).sum())
    assert batch / len(probes) <= bound, (batch / len(probes), bound)
    sample = probes[:200_000].tolist()
    per_item = sum(1 for x in sample if x in f)
    assert per_item == int(f.contains_many(probes[:200_000]).sum())
    assert f.contains_many(keys).all()


# ---- the list loop: inline keys, general keys and Python code between them ----------


class IntKey(int):
    """An int subclass: hashed by the general path, like the int it equals."""


class ListLoopTests:
    @pytest.mark.parametrize("cls", CLASSES)
    def test_general_keys_between_inline_ones_across_chunks(self, cls: type[BloomFilter],
                                                            rng: random.Random) -> None:
        # Keys the inline path declines (int subclasses, bytearray, non-ASCII str, ints
        # over 64 bits) scattered through a list longer than several 1024-key chunks.
        keys: list[object] = []
        for i in range(5000):
            r = rng.randrange(8)
            v = rng.randrange(-(2**63), 2**63)
            keys.append(IntKey(v) if r == 0 else bytearray(b"b%d" % i) if r == 1
                        else f"é{i}" if r == 2 else v * 2**64 if r == 3 else v)
        one, many = cls(5000, 0.01, seed=2), cls(5000, 0.01, seed=2)
        new = sum(one.add(k) for k in keys)
        assert many.add_many(keys) == new
        assert one == many
        assert many.contains_many(keys) == [True] * len(keys)
        assert many.contains_many(tuple(keys)) == [True] * len(keys)

    @pytest.mark.parametrize("cls", CLASSES)
    def test_key_function_that_mutates_the_list(self, cls: type[BloomFilter]) -> None:
        # A key= callback shrinks (then grows) the list being added: no crash, no read
        # past the end, and every key that was still there when reached is added.
        keys = [f"k{i}" for i in range(3000)]
        seen: list[str] = []

        def key(k: str) -> str:
            seen.append(k)
            if len(seen) == 10:
                del keys[100:]
            if len(seen) == 50:
                keys.extend(f"x{i}" for i in range(2000))
            return k

        f = cls(10_000, 0.01, key=key)
        f.add_many(keys)
        assert seen == keys
        assert all(k in f for k in keys)

    def test_bool_results_keep_their_references(self) -> None:
        # The list result adds the references to True and False in bulk (3.11): the
        # counts must come out exactly as an INCREF per item would leave them.
        import sys

        f = BlockedBloomFilter(1000, 0.01)
        f.add_many(range(500))
        probes = list(range(1000))
        before = (sys.getrefcount(True), sys.getrefcount(False))
        res = f.contains_many(probes)
        during = (sys.getrefcount(True), sys.getrefcount(False))
        hits = sum(res)
        del res
        after = (sys.getrefcount(True), sys.getrefcount(False))
        assert hits >= 500
        if sys.version_info < (3, 12):  # immortal from 3.12 on: counts are not kept
            assert (during[0] - before[0], during[1] - before[1]) == (hits, 1000 - hits)
            assert after == before
