"""CountingBloomFilter, blocked layout (issue #21.3): one 64-byte line per key,
sized with the blocked occupancy model over blocks of 512 / counter_bits
counters; its measured rate at capacity (R3), its format (layout 1 at
params +14, R8 goldens in test_counting.py, R12-R15 hostile input), and what
it shares or refuses with the classic layout."""

from __future__ import annotations

import importlib
import math
import random
import struct

import pytest

import bloomkit
from bloomkit import CountingBloomFilter, FormatError, IncompatibleFiltersError
from bloomkit.counting import counting_design
from hostile_helpers import (
    HEADER_INT_FIELDS,
    bit_flips,
    every_byte_value,
    mutate_fields,
    reseal,
    truncations_and_trailing,
)

np = pytest.importorskip("numpy")
design_module = importlib.import_module("bloomkit.design")
fpr_module = importlib.import_module("bloomkit._blocked_fpr")  # the blocked-layout FPR models

CELLS = {4: 128, 8: 64, 16: 32}
HEADER = 128
LAYOUT_OFF = 64 + 14


class LayoutTests:
    def test_blocked_is_the_default_and_classic_stays_available(self) -> None:
        assert CountingBloomFilter(1000).layout == "blocked"
        c = CountingBloomFilter(1000, layout="classic")
        assert c.layout == "classic" and c.num_blocks == 0
        assert c.num_counters == bloomkit.design(1000, 0.01).num_bits

    @pytest.mark.parametrize("bits", [4, 8, 16])
    def test_shape_follows_the_design(self, bits: int) -> None:
        f = CountingBloomFilter(5000, 0.01, counter_bits=bits)
        d = counting_design(5000, 0.01, counter_bits=bits)
        assert (f.num_counters, f.num_hashes, f.num_blocks) == (
            d.num_bits, d.num_hashes, d.num_blocks)
        assert f.num_counters == f.num_blocks * CELLS[bits]
        assert f.nbytes == f.num_blocks * 64  # exactly one line per block

    @pytest.mark.parametrize("bits", [4, 8, 16])
    def test_a_keys_counters_share_one_block(self, bits: int, rng: random.Random) -> None:
        f = CountingBloomFilter(3000, 0.001, counter_bits=bits, seed=rng.randrange(2**64))
        for _ in range(300):
            key = rng.randrange(-(2**63), 2**63)
            pos = f._counter_positions(key)
            assert len(pos) == f.num_hashes
            assert len({p // CELLS[bits] for p in pos}) == 1
            assert all(0 <= p < f.num_counters for p in pos)

    def test_counters_move_where_the_positions_say(self) -> None:
        f = CountingBloomFilter(500, 0.01)
        f.add("k")
        before = f.to_bytes()
        f.add("k")
        diff = [i for i, (a, b) in enumerate(zip(before, f.to_bytes(), strict=True))
                if a != b and i >= HEADER]
        touched = {HEADER + p // 2 for p in f._counter_positions("k")}
        assert set(diff) <= touched and diff

    @pytest.mark.parametrize("bits", [4, 8, 16])
    def test_no_false_negatives_through_adds_and_removes(
        self, bits: int, rng: random.Random
    ) -> None:
        f = CountingBloomFilter(2000, 0.02, counter_bits=bits, seed=rng.randrange(2**32))
        keys = [rng.randrange(2**62) for _ in range(2000)]
        f.add_many(keys[:1000])
        for k in keys[1000:]:
            f.add(k)
        assert all(f.contains_many(keys)) and all(k in f for k in keys)
        f.remove_many(keys[:700])
        for k in keys[700:1200]:
            f.remove(k)
        assert all(k in f for k in keys[1200:])
        assert len(f) == 800
        assert abs(f.estimate_count() - 800) < 0.1 * 800

    def test_union_and_copy(self) -> None:
        a, b = CountingBloomFilter(1000, seed=3), CountingBloomFilter(1000, seed=3)
        a.add_many(range(300))
        b.add_many(range(200, 500))
        u = a | b
        assert all(u.contains_many(range(500)))
        assert u.count(250) >= 2 and u == a.union(b)
        assert u.copy() == u and bloomkit.loads(u.to_bytes()) == u

    def test_layouts_do_not_merge_or_compare_equal(self) -> None:
        blocked = CountingBloomFilter(1000)
        classic = CountingBloomFilter(1000, layout="classic")
        with pytest.raises(IncompatibleFiltersError):
            blocked | classic
        with pytest.raises(IncompatibleFiltersError):
            classic.union(blocked)
        with pytest.raises(IncompatibleFiltersError):
            blocked |= classic
        assert blocked != classic

    def test_same_shape_but_other_layout_is_incompatible(self) -> None:
        # 1024 counters, k = 6 in both layouts: only the layout differs.
        classic = CountingBloomFilter(1000, layout="classic")
        blocked = CountingBloomFilter(1000)
        data = bytearray(classic.to_bytes())
        struct.pack_into("<Q", data, 64, blocked.num_counters)
        struct.pack_into("<I", data, 72, blocked.num_hashes)
        struct.pack_into("<Q", data, 32, blocked.nbytes)
        data = data[:HEADER] + bytes(blocked.nbytes)
        same_shape = bloomkit.loads(reseal(data))
        assert (same_shape.num_counters, same_shape.num_hashes) == (
            blocked.num_counters, blocked.num_hashes)
        assert same_shape.layout == "classic"
        with pytest.raises(IncompatibleFiltersError, match="layouts"):
            same_shape | blocked
        assert same_shape != blocked

    def test_to_bloom_needs_the_classic_layout(self) -> None:
        with pytest.raises(TypeError, match="classic layout"):
            CountingBloomFilter(100).to_bloom()

    def test_bad_layout_arguments(self) -> None:
        with pytest.raises(ValueError, match="layout"):
            CountingBloomFilter(100, layout="cuckoo")
        with pytest.raises(TypeError, match="layout"):
            CountingBloomFilter(100, layout=1)  # type: ignore[call-overload]
        with pytest.raises(ValueError, match="1e-07"):
            CountingBloomFilter(100, 1e-8)
        assert CountingBloomFilter(100, 1e-8, layout="classic").layout == "classic"

    def test_repr_names_the_layout(self) -> None:
        assert "layout='blocked'" in repr(CountingBloomFilter(10))
        assert "layout" not in repr(CountingBloomFilter(10, layout="classic"))

    def test_save_open_round_trip(self, tmp_path: object) -> None:
        import pathlib

        path = pathlib.Path(str(tmp_path)) / "c.bkf"
        f = CountingBloomFilter(1000, counter_bits=8)
        f.add_many(range(100))
        f.save(path)
        with bloomkit.open(path, "r+") as g:
            assert g == f and g.layout == "blocked"
            g.add(1000)
            g.remove(0)
        h = bloomkit.load(path)
        assert 1000 in h and h.count(1) == 1 and len(h) == 100


# ---- R3: the rate at capacity ---------------------------------------------------------


@pytest.mark.parametrize(("bits", "p"), [(4, 0.01), (4, 0.001), (8, 0.01), (16, 0.02)])
def test_measured_rate_at_capacity_meets_the_model(bits: int, p: float) -> None:
    """Five hash seeds of 20,000 keys each at capacity: the mean measured rate is
    the model's (which is <= p) within 5 standard errors, plus 3% of p for the
    spread of the rate between filters."""
    n, probes_n, seeds = 20_000, 200_000, range(5)
    d = counting_design(n, p, counter_bits=bits)
    assert d.expected_error_rate <= p
    keys = np.arange(n, dtype=np.int64)
    probes = np.arange(n, n + probes_n, dtype=np.int64)
    rates = []
    for seed in seeds:
        f = CountingBloomFilter(n, p, counter_bits=bits, seed=seed)
        f.add_many(keys)
        assert f.contains_many(keys).all()
        rates.append(float(f.contains_many(probes).mean()))
    observed = sum(rates) / len(rates)
    se = math.sqrt(d.expected_error_rate / (probes_n * len(rates)))
    print(f"bits {bits} p {p}: model {d.expected_error_rate:.5g}, measured {rates}")
    assert abs(observed - d.expected_error_rate) <= 5 * se + 0.03 * p
    assert observed <= p + 5 * se + 0.03 * p


def test_estimate_error_rate_reads_the_blocks() -> None:
    f = CountingBloomFilter(20_000, 0.01, seed=9)
    f.add_many(np.arange(20_000, dtype=np.int64))
    probes = np.arange(20_000, 420_000, dtype=np.int64)
    measured = float(f.contains_many(probes).mean())
    est = f.estimate_error_rate()
    assert abs(est - measured) <= 5 * math.sqrt(est / probes.size)


# ---- design ---------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "p"), [(1000, 0.01), (10**5, 0.001), (10**6, 0.01),
                                      (10**6, 1e-4), (77, 0.3)])
@pytest.mark.parametrize("bits", [4, 8, 16])
def test_design_is_the_fewest_blocks_over_k(n: int, p: float, bits: int) -> None:
    d = counting_design(n, p, counter_bits=bits)
    assert d == design_module._blocked_design_exhaustive(n, p, 1, CELLS[bits])
    assert d.expected_error_rate <= p
    if d.num_blocks > 1:  # one block fewer misses the target at this k
        assert fpr_module.occupancy_fpr(n, d.num_blocks - 1, d.num_hashes,
                                            CELLS[bits]) > p


def test_design_reference_figures() -> None:
    """The counters per key quoted in bk_counting.c and docs/counting.md."""
    got = {(bits, p): round(counting_design(10**6, p, counter_bits=bits).bits_per_key, 2)
           for bits in (4, 8, 16) for p in (0.01, 0.001, 1e-4)}
    assert got == {
        (4, 0.01): 10.85, (4, 0.001): 19.01, (4, 1e-4): 30.94,
        (8, 0.01): 12.14, (8, 0.001): 24.0, (8, 1e-4): 45.48,
        (16, 0.01): 14.74, (16, 0.001): 36.21, (16, 1e-4): 90.43,
    }
    assert counting_design(10**6, 0.01).num_hashes == 6
    assert counting_design(10**6, 0.01, layout="classic") == bloomkit.design(10**6, 0.01)


# ---- R12-R15: hostile input -----------------------------------------------------------

PARAM_FIELDS = [(64, "Q"), (72, "I"), (76, "H"), (78, "H"), (80, "Q"), (88, "d"), (96, "Q"),
                (104, "Q")]


def _small(bits: int = 4) -> bytes:
    f = CountingBloomFilter(40, 0.1, counter_bits=bits)
    f.add_many(range(10))
    f.add_many(["x"] * 20)
    return f.to_bytes()


class HostileInputTests:
    def test_truncations_and_trailing_bytes(self) -> None:
        truncations_and_trailing(_small())

    def test_every_bit_flip(self) -> None:
        bit_flips(_small())

    def test_every_header_byte_value(self) -> None:
        every_byte_value(_small(), 0, HEADER)

    def test_extreme_field_values(self) -> None:
        mutate_fields(_small(), HEADER_INT_FIELDS + PARAM_FIELDS)
        for bits in (8, 16):
            mutate_fields(_small(bits), PARAM_FIELDS)

    def test_a_later_layout_is_unsupported_not_corrupt(self) -> None:
        data = bytearray(_small())
        struct.pack_into("<H", data, LAYOUT_OFF, 2)
        with pytest.raises(FormatError, match="unsupported counting Bloom layout"):
            bloomkit.loads(reseal(data))

    def test_blocked_shape_rules(self) -> None:
        f = CountingBloomFilter(40, 0.1)
        data = bytearray(f.to_bytes())
        bad_m = bytearray(data)
        struct.pack_into("<Q", bad_m, 64, f.num_counters - 2)  # same payload, not whole blocks
        with pytest.raises(FormatError, match="multiple of 512 / counter_bits"):
            bloomkit.loads(reseal(bad_m))
        bad_k = bytearray(data)
        struct.pack_into("<I", bad_k, 72, 25)
        with pytest.raises(FormatError, match=r"blocked num_hashes must be in \[1, 24\]"):
            bloomkit.loads(reseal(bad_k))

    def test_old_readers_saw_one_u32_counter_bits(self) -> None:
        """What a bloomkit without the blocked layout reads at +12: 0x10004,
        which it refuses ("counter_bits must be 4, 8 or 16"); every older
        file has 0 in the high half, which this bloomkit reads as classic."""
        blocked = CountingBloomFilter(40, 0.1).to_bytes()
        assert struct.unpack_from("<I", blocked, 76)[0] == 0x10004
        classic = CountingBloomFilter(40, 0.1, layout="classic").to_bytes()
        assert struct.unpack_from("<I", classic, 76)[0] == 4


@pytest.mark.parametrize("k", [1, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 17, 23, 24])
def test_vector_query_reads_the_nibbles_the_positions_name(k: int, rng: random.Random) -> None:
    # The AVX2 query of the 4-bit blocked layout (bk_simd.c) takes the
    # nibbles 8 at a time (4 per stream word), picking the byte with pshufb
    # and the nibble by the position's low bit.  For every k around those
    # boundaries, on counters of every value (adds repeated up to saturation
    # in both nibbles, removes back to zero), `in`, list and numpy batches
    # must say "all k counters nonzero" exactly as the counters in the
    # payload do, on the vector and the scalar path.
    simd_before = bloomkit._core.BloomBase._simd()
    m = 128 * 37
    f = bloomkit._core.CountingBase.__new__(CountingBloomFilter, m, k, 4, 1000, 0.01,
                                            seed=rng.randrange(2**64), layout=1)
    keys = [rng.randrange(2**64) for _ in range(40 * 32 // k + 5)]
    for i, key in enumerate(keys):
        for _ in range(1 + i % 17):  # counts 1..17: saturates some at 15
            f.add(key)
    for key in keys[::3]:
        f.remove(key)
    payload = f.to_bytes()[HEADER:]

    def counter(p: int) -> int:
        return (payload[p // 2] >> (4 * (p % 2))) & 15

    probes = keys + [rng.randrange(2**64) for _ in range(3000)]
    want = [all(counter(p) for p in f._counter_positions(q)) for q in probes]
    assert any(want) and not all(want)
    arr = np.array(probes, dtype=np.uint64)
    try:
        for simd in (False, True):
            bloomkit._core.BloomBase._simd(simd)
            assert [q in f for q in probes] == want, simd
            assert list(f.contains_many(probes)) == want, simd
            assert list(f.contains_many(arr)) == want, simd
    finally:
        bloomkit._core.BloomBase._simd(simd_before)
