"""SlidingBloomFilter's blocked layout (layout_version 1, issue #32;
bk_sliding_blocked.c): the documented derivation, the answers against the
definition read from the bytes, the validator's new fields, the space
against a Bloom filter, and the default choice of layout.  The window and
rate guarantees over long streams run for both layouts in
tests/test_sliding.py::StreamTests; the goldens (SlidingBloomFilter_blocked_*)
in tests/format."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest

import bloomkit
from bloomkit import FormatError, SlidingBloomFilter
from bloomkit.sliding import sliding_design
from hostile_helpers import load_clean, reseal

P = 64
OFF_K, OFF_L, OFF_M, OFF_LAYOUT = 0, 4, 8, 96
MASK = 2**64 - 1


def mix64(x: int) -> int:
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & MASK
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def births_len(S: int) -> int:
    return -(-S * 16 // 64) * 64


def test_default_layout_by_rate() -> None:
    assert SlidingBloomFilter(1000, 0.01).layout == "blocked"
    assert SlidingBloomFilter(1000, 1e-4).layout_version == 1
    assert SlidingBloomFilter(1000, 1e-5).layout == "sliced"
    assert SlidingBloomFilter(1000, 0.01, layout="sliced").layout_version == 0
    with pytest.raises(ValueError, match="layout"):
        SlidingBloomFilter(1000, 0.01, layout="lines")
    d = sliding_design(10**6, 0.01)
    assert d.layout == "blocked" and d.num_slices <= 32 and d.slice_bits % 32 == 0


LANE_MUL = [(mix64(p + 1) & 0xFFFFFFFF) | 1 for p in range(32)]


def test_positions_follow_the_documented_derivation() -> None:
    """bk_sliding.h: block = mulhi(h, B), w = mix64(h + gamma), x_p = the low
    (p < 16) or high 32 bits of w, pos = (x_p * M[p] mod 2**32) >> 27 with
    M[p] = (mix64(p + 1) mod 2**32) | 1; the key's bit of slice p is
    block * 32 + pos."""
    f = SlidingBloomFilter(5000, 0.001, seed=9)
    B = f.slice_bits // 32
    for key in ("a", b"b", 7, -3):
        h = f._key_hash(key)
        block = (h * B) >> 64
        w = mix64((h + 0x9E3779B97F4A7C15) & MASK)
        want = [block * 32 + ((((w if p < 16 else w >> 32) & 0xFFFFFFFF) * LANE_MUL[p]
                               & 0xFFFFFFFF) >> 27) for p in range(f.num_slices)]
        assert f._slice_positions(key) == want


def test_vector_and_scalar_queries_agree(rng: Any) -> None:
    """bk_simd.c's AVX2 lane test and the scalar loop set and read the same
    bits (both paths on one filter, adds through each)."""
    before = bloomkit._core.BloomBase._simd()
    try:
        states = []
        for simd in (False, True):
            bloomkit._core.BloomBase._simd(simd)
            f = SlidingBloomFilter(3000, 0.01, seed=6)
            f.add_many(np.arange(12_000, dtype=np.int64))
            states.append(f.to_bytes())
        assert states[0] == states[1]
        probes = [rng.randrange(2**40) for _ in range(3000)] + list(range(9000, 12_000))
        answers = []
        for simd in (False, True):
            bloomkit._core.BloomBase._simd(simd)
            answers.append(([p in f for p in probes], [bool(x) for x in f.contains_many(probes)]))
        assert answers[0] == answers[1]
        assert all(answers[0][0][3000:])
    finally:
        bloomkit._core.BloomBase._simd(before)


def _has(data: bytes, S: int, pos: int, p: int) -> bool:
    """Bit pos of physical slice p, read from the bytes as docs/sliding.md
    ("File layout") says: bit pos % 32 of the u32 lane p of block pos // 32."""
    off = 192 + births_len(S) + (pos // 32) * 128 + 4 * p
    (lane,) = struct.unpack_from("<I", data, off)
    return bool(lane >> (pos % 32) & 1)


@pytest.mark.parametrize("rate", [0.3, 1e-2, 1e-3])
def test_answers_match_the_definition_read_from_the_bytes(rate: float, rng: Any) -> None:
    f = SlidingBloomFilter(400, rate, seed=rng.randrange(2**32))
    S, k = f.num_slices, f.num_hashes
    for step in range(6):
        f.add_many([rng.randrange(2**40) for _ in range(rng.randrange(50, 700))])
        data = f.to_bytes()
        g = f.generation
        probe = [rng.randrange(2**40) for _ in range(400)]
        got = f.contains_many(probe)
        for key, ans in zip(probe, got, strict=True):
            pos = f._slice_positions(key)
            have = [_has(data, S, pos[(g - a) % S], (g - a) % S) for a in range(S)]
            want = any(all(have[a:a + k]) for a in range(S - k + 1))
            assert bool(ans) == want == (key in f), (step, key)


def test_add_and_add_many_give_the_same_bytes(rng: Any) -> None:
    a = SlidingBloomFilter(3000, 0.01, seed=4)
    b = SlidingBloomFilter(3000, 0.01, seed=4)
    keys = [rng.randrange(5000) for _ in range(20_000)]
    got = [a.add(k) for k in keys]
    n = b.add_many(keys[:7000]) + b.add_many(np.array(keys[7000:], dtype=np.int64))
    assert a.to_bytes() == b.to_bytes()
    assert sum(got) == n


def _state() -> bytes:
    f = SlidingBloomFilter(200, 0.01, seed=2)
    f.add_many(range(500))
    return f.to_bytes()


def _patch(data: bytes, off: int, fmt: str, value: Any) -> bytes:
    buf = bytearray(data)
    struct.pack_into("<" + fmt, buf, P + off, value)
    return reseal(buf)


class HostileBlockedTests:
    @pytest.mark.parametrize(("off", "fmt", "value", "reason"), [
        (OFF_K, "I", 30, "k \\+ l <= 32"), (OFF_L, "I", 40, "k \\+ l <= 32"),
        (OFF_M, "Q", 100, "multiple of 32"), (OFF_M, "Q", 0, "multiple of 32"),
        (OFF_M, "Q", 2**42, "2\\*\\*46"), (OFF_M, "Q", 2**20, "payload_len"),
        (OFF_LAYOUT, "I", 2, "layout_version"), (OFF_LAYOUT, "I", 2**31, "layout_version"),
    ])
    def test_bad_field_names_the_reason(self, off: int, fmt: str, value: Any,
                                        reason: str) -> None:
        with pytest.raises(FormatError, match=reason):
            bloomkit.loads(_patch(_state(), off, fmt, value))

    def test_layout_flipped_to_sliced_is_refused(self) -> None:
        # the same bytes read as layout 0 have the wrong payload length
        with pytest.raises(FormatError, match=r"multiple of 512|payload_len"):
            bloomkit.loads(_patch(_state(), OFF_LAYOUT, "I", 0))

    def test_unused_lane_must_be_zero(self) -> None:
        from bloomkit import _core

        base = _core.SlidingBase(4, 8, 320, 100, 0.01, layout=1)  # 12 slices: lanes 12..31 unused
        base.add_many(range(300))
        data = bytearray(base.to_bytes())
        f = bloomkit.loads(bytes(data))
        assert f.num_slices == 12 and f.layout == "blocked"
        assert all(f.contains_many(range(280, 300)))
        data[192 + births_len(f.num_slices) + 128 + 4 * 31] = 1  # lane 31 of block 1
        with pytest.raises(FormatError, match="unused lane"):
            bloomkit.loads(reseal(data))

    def test_random_flips_load_cleanly_or_fail_cleanly(self, rng: Any) -> None:
        data = _state()
        for _ in range(400):
            buf = bytearray(data)
            i = rng.randrange(0, len(buf))
            buf[i] ^= 1 << rng.randrange(8)
            load_clean(reseal(buf))


@pytest.mark.parametrize(("rate", "limit"), [(1e-2, 2.5), (1e-3, 2.5), (1e-4, 2.5)])
def test_space_against_a_bloom_filter(rate: float, limit: float) -> None:
    """Issue #32's target: at most 2.5x the bits of a BloomFilter for the
    same window and rate (1e-2: 2.32x; layout 0: 2.07x)."""
    d = sliding_design(10**6, rate, "blocked")
    ratio = d.num_bits / bloomkit.design(10**6, rate).num_bits
    print(f"{rate}: k {d.num_hashes} l {d.generations} {d.bits_per_key:.2f} bits/key, "
          f"{ratio:.3f}x a BloomFilter")
    assert ratio <= limit


def test_model_meets_the_target_and_counts_the_blocking() -> None:
    for rate in (0.1, 1e-2, 1e-3):
        k, gens, lam = SlidingBloomFilter._design_blocked(rate)
        est, se = SlidingBloomFilter._model_rate_blocked(k, gens, lam)
        assert est + 2 * se <= rate
        # the blocks' shared load costs rate over independent slices of the same bits
        assert est > SlidingBloomFilter._model_rate(k, gens, 32 / lam)


def test_estimate_is_exact_for_the_state(rng: Any) -> None:
    """estimate_error_rate averages the run probability over the blocks:
    close to the measured rate on never-added keys."""
    f = SlidingBloomFilter(50_000, 0.01, seed=rng.randrange(2**32))
    f.add_many(np.arange(200_000, dtype=np.int64))
    probes = np.arange(-1, -400_001, -1, dtype=np.int64)
    fp = float(f.contains_many(probes).mean())
    est = f.estimate_error_rate()
    se = (est * (1 - est) / len(probes)) ** 0.5
    assert abs(fp - est) <= 4 * se + 1e-4, (fp, est)
    assert est <= 0.0105
