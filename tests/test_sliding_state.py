"""SlidingBloomFilter's bytes and answers are frozen: speed work on bk_sliding.c (the add that
no longer runs a separate query, the prefetching batches, the strength-reduced derivation)
must not change one byte of any state or one answer.

Two locks:
  - SCENARIOS: fixed streams (count and time mode, early and pending shifts, keyed, rates from
    0.3 to 1e-4, per-item adds, list and numpy batches) whose state sha256 after each phase and
    whose answers (add's "was absent", add_many's counts, contains_many, `in`) were recorded
    from the build of main at 995eb66 (before the speed work) by ``python
    tests/test_sliding_state.py``; the state bytes are hashed without the key-domain
    flag bits (docs/FORMAT.md), which that build did not write.  The recording must never
    be regenerated: a difference is a format or answer change (R5: old files answer as they did).
  - a reference model in plain Python of the query of bk_sliding.h (k consecutive ages, from
    the key's documented positions, ``_slice_positions``) against the C query at random states,
    with the rng fixture.
"""

from __future__ import annotations

import hashlib
import sys
import warnings
from typing import Any

import numpy as np
import pytest

from bloomkit import SlidingBloomFilter, SlidingWindowWarning
from key_domains import without_key_domains


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _digest(parts: list[Any]) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else repr(p).encode())
    return h.hexdigest()[:32]


def run_scenario(name: str) -> list[str]:
    """The stream of one scenario: a digest after each phase (state bytes + answers)."""
    spec = SCENARIO_SPECS[name]
    cap, rate, window = spec["capacity"], spec["rate"], spec.get("window")
    clock = Clock(1_700_000_000.0)
    kw: dict[str, Any] = {"window": window, "seed": spec.get("seed", 0)}
    if window is not None:
        kw["clock"] = clock
    if "secret" in spec:
        kw["secret"] = spec["secret"]
    f = SlidingBloomFilter(cap, rate, layout="sliced", **kw)  # layout 0 is what is frozen
    rng = np.random.default_rng(spec.get("seed", 0) + 17)
    out: list[str] = []
    n = spec["stream"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SlidingWindowWarning)
        # phase 1: per-item adds of ints, str and bytes (repeats included)
        ans = []
        for i in range(n):
            k: Any = int(rng.integers(0, n)) if i % 3 else (f"s{i % (n // 2 + 1)}" if i % 2
                                                             else f"b{i}".encode())
            ans.append(f.add(k))
            if window is not None and i % 97 == 0:
                clock.t += spec["tick"]
        out.append(_digest([without_key_domains(f), ans]))
        # phase 2: list batches, then queries of present and absent keys
        counts = []
        for j in range(4):
            counts.append(f.add_many([f"L{j}-{i}" for i in range(n // 4)] + list(range(50))))
            if window is not None:
                clock.t += spec["tick"] * 3
        probe = [f"L3-{i}" for i in range(0, n // 4, 3)] + [f"x{i}" for i in range(n)]
        q = f.contains_many(probe)
        inq = [k in f for k in probe[:: 5]]
        out.append(_digest([without_key_domains(f), counts, bytes(q), inq]))
        # phase 3: numpy batches (the GIL-free path), across many generations
        counts = []
        for j in range(6):
            arr = rng.integers(-2**62, 2**62, n, dtype=np.int64)
            counts.append(f.add_many(arr))
            counts.append(f.add_many(arr[: n // 3]))  # repeats
            if window is not None:
                clock.t += spec["tick"] * (7 if j != 3 else 10_000)  # one long pause
        absent = rng.integers(-2**62, 2**62, 4 * n, dtype=np.int64)
        present = arr[-(n // 2):]
        out.append(_digest([without_key_domains(f), counts, f.contains_many(absent).tobytes(),
                            f.contains_many(present).tobytes(), f.generation]))
        # phase 4: time mode: queries with pending shifts, then an add applies them
        if window is not None:
            clock.t += spec["tick"] * 40
            q = f.contains_many(present)
            f.add("after")
            out.append(_digest([without_key_domains(f), q.tobytes(), f.early_shifts]))
    return out


SCENARIO_SPECS: dict[str, dict[str, Any]] = {
    "count-1e-2": {"capacity": 3000, "rate": 1e-2, "stream": 4000},
    "count-1e-3-seed": {"capacity": 2000, "rate": 1e-3, "stream": 3000, "seed": 11},
    "count-0.3": {"capacity": 500, "rate": 0.3, "stream": 2000, "seed": 5},
    "count-1e-4": {"capacity": 1500, "rate": 1e-4, "stream": 2500, "seed": 9},
    "count-tiny": {"capacity": 1, "rate": 0.05, "stream": 300},
    "count-big": {"capacity": 100_000, "rate": 1e-2, "stream": 40_000, "seed": 2},
    "keyed": {"capacity": 2500, "rate": 1e-2, "stream": 3000, "secret": b"0123456789abcdef"},
    "time": {"capacity": 4000, "rate": 1e-2, "stream": 3000, "window": 60.0, "tick": 0.5},
    "time-early": {"capacity": 600, "rate": 1e-2, "stream": 3000, "window": 3600.0,
                   "tick": 0.01, "seed": 3},
}

# Recorded from main at 995eb66 (the build before the speed work); never regenerate.
SCENARIOS: dict[str, list[str]] = {
    "count-0.3": [
        "5c55d0299241328e17d20116ac967593",
        "371e010486fb13b8269dbb4b365df4b6",
        "bfb577d38878fe76f66ce7c8c713aca3",
    ],
    "count-1e-2": [
        "511fa7d3b1ae6e39e89960b2f3456315",
        "179ba58d04a6f556ad4d06e4afc3aa3d",
        "b3eeb843aec949565229441984403c24",
    ],
    "count-1e-3-seed": [
        "024987027dcb05fead3dc3cde3750b99",
        "1481fa5340587db6e7d28883fff4fa5a",
        "1b669005df56dfad34d3073f90eeb898",
    ],
    "count-1e-4": [
        "d1c2c4e2f8ef662cd22edbf845ab1532",
        "aaf06f6349ac454ad4d8d74a648d3977",
        "9e984b8688dbdda720d3d927e44206aa",
    ],
    "count-big": [
        "9b8c2f1c22ab4684b7c1a56a87541dfa",
        "4a253a15ca34478d42e016f3e6b821cd",
        "d6b9f21631caa5a01ca48b41421776f0",
    ],
    "count-tiny": [
        "ddcf6e9865378efd506648e11778b83e",
        "9d9bd5401c4bdbb39aee0355d7196d06",
        "06bb8f3fc82a3643cc94fe0273bacd0a",
    ],
    "keyed": [
        "8f6a2225e16df9c6bd1e502492ff5b9b",
        "8fa13af02212fb5a7e2ba9afdcfcda50",
        "ed40af7f3fe9473c5c08512394435791",
    ],
    "time": [
        "12d4993c93d6b885da3ddfff48f06beb",
        "1be0efe1be48f24bb6af0d9a51631281",
        "bb9d942626c2a04acca408eb74719543",
        "706c6b1c1289637a1f1798268e89edd8",
    ],
    "time-early": [
        "38210e4165b0f21d670cf0d2076c4746",
        "b4406a41d6920b3f2784ba60aa6173d8",
        "f29893102bbed458a93a462478c29cda",
        "05a9c9b37d87758a61049bad7d453e3a",
    ],
}


@pytest.mark.parametrize("name", sorted(SCENARIO_SPECS))
def test_states_and_answers_are_main_s(name: str) -> None:
    assert run_scenario(name) == SCENARIOS[name]


def _model_contains(pos: list[int], bits: list[bytes], m: int, g: int, k: int) -> bool:
    """bk_sliding.h's query, read literally: some k consecutive ages all hold the key's bit
    (age a is physical slice (g - a) mod S)."""
    S = len(pos)
    have = []
    for a in range(S):
        p = (g - a) % S
        word = int.from_bytes(bits[p][pos[p] // 64 * 8: pos[p] // 64 * 8 + 8], "little")
        have.append(bool(word >> (pos[p] % 64) & 1))
    return any(all(have[a: a + k]) for a in range(S - k + 1))


@pytest.mark.parametrize("rate", [0.3, 1e-2, 1e-3])
def test_query_matches_the_reference_model(rate: float, rng: Any) -> None:
    f = SlidingBloomFilter(400, rate, seed=rng.randrange(2**32), layout="sliced")
    S, k, m = f.num_slices, f.num_hashes, f.slice_bits
    births = -(-S * 16 // 64) * 64
    for step in range(6):
        f.add_many([rng.randrange(2**40) for _ in range(rng.randrange(50, 700))])
        data = f.to_bytes()
        payload = data[192 + births:]
        bits = [payload[p * m // 8: (p + 1) * m // 8] for p in range(S)]
        probe = [rng.randrange(2**40) for _ in range(600)]
        got = f.contains_many(probe)
        for key, ans in zip(probe, got, strict=True):
            want = _model_contains(f._slice_positions(key), bits, m, f.generation, k)
            assert ans == want == (key in f), (step, key)


if __name__ == "__main__":  # record (only ever from the build of main named above)
    for name in sorted(SCENARIO_SPECS):
        print(f'    "{name}": [')
        for d in run_scenario(name):
            print(f'        "{d}",')
        print("    ],")
    sys.exit(0)
