"""The probe formulas of the kinds' "File layout" sections (docs/bloom.md, ...),
re-implemented here, match the C core.

The bit a key sets is part of the file format: this pins it independently
of the C code, and checks the 64-bit arithmetic stays correct far beyond
2^32 bits (m up to 2^40 and more, in the Python model).
"""

from __future__ import annotations

import random

import pytest

from bloomkit import BlockedBloomFilter, BloomFilter, _core

M64 = 2**64 - 1
SALT = [
    0xF49375D5, 0xE35D0925, 0x54469C25, 0x027C79C1, 0xA70ECF87, 0x43275F07,
    0x5B43C0D9, 0x6B8EB1B9, 0xDC3D9D55, 0x7319F4CD, 0x80601811, 0x9CAD1C6D,
    0x44FF7C1F, 0xE77B7DE9, 0x3CBED02F, 0x5B71C39D, 0x75A0DE43, 0xC85D8003,
    0xE3F50C51, 0x3FBA642B, 0x1CA9B433, 0xB183A11B, 0x213CA991, 0x71FDB227,
]  # fmt: skip


def mix64(x: int) -> int:
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & M64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def classic_positions(h: int, m: int, k: int) -> list[int]:
    x, y, out = h, mix64(h), []
    for i in range(k):
        out.append((x * m) >> 64)
        x = (x + y) & M64
        y = (y + i) & M64
    return out


def blocked_positions(h: int, num_blocks: int, k: int, version: int = 1) -> list[int]:
    base = ((h * num_blocks) >> 64) * 512
    if version == 0:
        g = h & 0xFFFFFFFF
        return [base + (((g * SALT[i]) & 0xFFFFFFFF) >> 23) for i in range(k)]
    # version 1: a splitmix64 stream seeded with h; 9 of every 16 bits
    words = [mix64((h + (j + 1) * 0x9E3779B97F4A7C15) & M64) for j in range((k + 3) // 4)]
    return [base + ((words[i // 4] >> (16 * (i % 4) + 7)) & 511) for i in range(k)]


class ProbeFormulaTests:
    @pytest.mark.parametrize("m,k", [(1, 1), (63, 3), (64, 7), (1000, 7), (9_585_059, 7),
                                     (2**20 + 7, 13), (100_003, 64)])
    def test_classic_matches_the_documented_formula(
        self, m: int, k: int, rng: random.Random
    ) -> None:
        f = BloomFilter.with_size(m, k, seed=rng.randrange(2**64))
        for _ in range(200):
            key = rng.randbytes(rng.randrange(0, 40))
            h = _core.key_hash(key, f.seed)
            assert f._key_hash(key) == h
            assert f._bit_positions(key) == classic_positions(h, m, k)

    @pytest.mark.parametrize("version", [0, 1])
    @pytest.mark.parametrize("blocks,k", [(1, 1), (2, 6), (19_328, 6), (30_251, 9), (777, 24),
                                          (43_028, 12), (5, 13), (3, 17)])
    def test_blocked_matches_the_documented_formula(
        self, blocks: int, k: int, version: int, rng: random.Random
    ) -> None:
        f = BlockedBloomFilter.with_size(blocks * 512, k, seed=rng.randrange(2**64),
                                         layout_version=version)
        assert f.layout_version == version
        for _ in range(200):
            key = rng.randrange(-(2**70), 2**70)
            h = _core.key_hash(key, f.seed)
            assert f._bit_positions(key) == blocked_positions(h, blocks, k, version)

    def test_positions_are_the_bits_set(self, rng: random.Random) -> None:
        for f in (BloomFilter(1000, 0.01), BlockedBloomFilter(1000, 0.01),
                  BlockedBloomFilter(1000, 0.01, layout_version=0)):
            key = rng.randbytes(16)
            f.add(key)
            payload = f.to_bytes()[128:]
            bits = {i for i in range(len(payload) * 8) if payload[i // 8] >> (i % 8) & 1}
            assert bits == set(f._bit_positions(key))

    def test_classic_math_spans_huge_filters(self, rng: random.Random) -> None:
        """64-bit reduction: probes cover all of m = 2^40 and m = 2^46 uniformly."""
        for m in (2**40, 2**40 + 12345, 2**46):
            positions = [
                p for _ in range(3000) for p in classic_positions(rng.randrange(2**64), m, 7)
            ]
            assert all(0 <= p < m for p in positions)
            assert max(positions) > 0.999 * m and min(positions) < 0.001 * m
            top_half = sum(p >= m // 2 for p in positions) / len(positions)
            assert 0.47 < top_half < 0.53
            above_2_32 = sum(p >= 2**32 for p in positions) / len(positions)
            assert above_2_32 > 0.99
