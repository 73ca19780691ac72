"""GrowableFilter: API, no false negatives against a set model (R1), the
false-positive rate at every growth step (R3), persistence and mapping, and
hostile input (R12-R15).  The C core has its own model test
(tests/native/test_bk_grow.c)."""

from __future__ import annotations

import math
import mmap
import pickle
import random
import struct
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

import bloomkit
import kind_list
from bloomkit import CapacityError, FormatError, GrowableFilter
from bloomkit._core import checksum, validate
from bloomkit.growable import growable_max_load

np = pytest.importorskip("numpy")

HEADER_LEN = 256
P = 64  # the parameter block


class ApiTests:
    def test_grows_and_keeps_every_key(self, rng: random.Random) -> None:
        f = GrowableFilter(1000, 0.01, seed=rng.randrange(2**32))
        keys = [rng.getrandbits(64) for _ in range(50_000)]
        added = f.add_many(keys)
        assert added == len(f) and added >= 0.99 * len(keys)
        assert all(f.contains_many(keys))
        assert all(k in f for k in keys[:2000])
        assert f.doublings >= 9 and f.num_buckets > 1000
        assert 0.4 < f.load_factor <= f.max_load + 1e-9

    def test_add_returns_whether_new(self) -> None:
        f = GrowableFilter(100)
        assert f.add("a") is True and f.add("a") is False and f.add(b"a") is False
        assert "a" in f and len(f) == 1

    def test_batch_matches_per_item(self, rng: random.Random) -> None:
        f = GrowableFilter(500, 0.02)
        f.add_many(range(0, 20_000, 3))
        probe = [rng.randrange(40_000) for _ in range(5000)]
        assert list(f.contains_many(probe)) == [k in f for k in probe]
        arr = np.array(probe, dtype=np.int64)
        assert list(f.contains_many(arr)) == [k in f for k in probe]

    def test_sizing_and_arguments(self) -> None:
        assert growable_max_load(0.01, 1024) == pytest.approx(0.01 * 1024 / (1.8 + 11.5))
        assert growable_max_load(0.5) == 0.9
        with pytest.raises(ValueError, match="too small"):
            GrowableFilter(100, 0.0005)
        with pytest.raises(ValueError, match="error_rate"):
            GrowableFilter(100, 1.5)
        with pytest.raises(ValueError, match="max_growth"):
            GrowableFilter(100, 0.01, max_growth=0.5)
        with pytest.raises(TypeError):
            GrowableFilter("100")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="capacity"):
            GrowableFilter(0)
        f = GrowableFilter(10_000, 0.01, max_growth=16)
        assert f.max_load == 0.9 and f.capacity == 10_000 and f.error_rate == 0.01

    def test_clear_copy_equality_repr(self) -> None:
        f = GrowableFilter(100, seed=3)
        f.add_many(range(5000))
        g = f.copy()
        assert g == f and g is not f
        g.add("new")
        assert g != f
        nb = GrowableFilter(100).num_buckets
        f.clear()
        assert len(f) == 0 and f.num_buckets == nb and 3 not in f
        assert "GrowableFilter(capacity=100" in repr(f)

    def test_no_union(self) -> None:
        f = GrowableFilter(100)
        with pytest.raises(TypeError):
            f | GrowableFilter(100)  # type: ignore[operator]

    def test_secret_and_key_function(self) -> None:
        s = bytes(range(16))
        f = GrowableFilter(100, secret=s)
        f.add("k")
        assert "k" in f and f.keyed
        g = GrowableFilter(100, key=lambda p: p[0])
        g.add(("a", 1))
        assert ("a", 2) in g

    def test_estimate_error_rate_tracks_the_measured_rate(self, rng: random.Random) -> None:
        f = GrowableFilter(1000, 0.01)
        f.add_many(range(200_000))
        probes = np.arange(10**9, 10**9 + 200_000, dtype=np.int64)
        measured = float(np.mean(f.contains_many(probes)))
        est = f.estimate_error_rate()
        assert abs(measured - est) <= 3 * math.sqrt(est * (1 - est) / len(probes)) + 1e-4


def test_rate_at_every_growth_step(rng: random.Random) -> None:
    """R3: grown 2^10 times from 10^3, the measured rate at the top of every
    load swing (just before a doubling) stays within 3 SE of 1%."""
    f = GrowableFilter(1000, 0.01, seed=rng.randrange(2**32))
    trials = 100_000
    probes = np.arange(2**40, 2**40 + trials, dtype=np.int64)
    keys = np.arange(1_024_000, dtype=np.int64)
    worst, steps, i = 0.0, 0, 0
    while i < len(keys):
        # add up to the key before the next doubling
        room = int(f.max_load * 32 * f.num_buckets) - (len(f) - f.stash_size)
        j = min(len(keys), i + max(room, 1))
        f.add_many(keys[i:j])
        i = j
        rate = float(np.mean(f.contains_many(probes)))
        worst = max(worst, rate)
        steps += 1
    assert f.doublings >= 19 and steps >= 19
    assert all(f.contains_many(keys))
    assert worst <= 0.01 + 3 * math.sqrt(0.01 * 0.99 / trials), worst


class GrowMachine(RuleBasedStateMachine):
    """Against a set: every added key stays present through growth, copies,
    byte and pickle round trips and clear."""

    def __init__(self) -> None:
        super().__init__()
        self.f: GrowableFilter = GrowableFilter(40, 0.05, seed=7)
        self.model: set[object] = set()

    def _norm(self, k: object) -> object:
        return k.encode() if isinstance(k, str) else k

    @rule(k=st.one_of(st.integers(-(2**70), 2**70), st.text(max_size=6), st.binary(max_size=6)))
    def add(self, k: object) -> None:
        self.f.add(k)
        self.model.add(self._norm(k))

    @rule(n=st.integers(0, 400), start=st.integers(0, 10**6))
    def add_many(self, n: int, start: int) -> None:
        ks = list(range(start, start + n))
        self.f.add_many(ks)
        self.model.update(ks)

    @rule()
    def round_trip(self) -> None:
        self.f = bloomkit.loads(bloomkit.dumps(self.f))

    @rule()
    def pickle_copy(self) -> None:
        self.f = pickle.loads(pickle.dumps(self.f)).copy()

    @rule()
    def clear(self) -> None:
        self.f.clear()
        self.model.clear()

    @invariant()
    def no_false_negatives(self) -> None:
        assert all(self.f.contains_many(list(self.model)))
        assert len(self.f) <= len(self.model)
        validate(self.f.to_bytes())


TestGrowMachine = GrowMachine.TestCase
TestGrowMachine.settings = settings(max_examples=40, stateful_step_count=30, deadline=None)


class PersistTests:
    def test_loads_pickle_and_files(self, tmp_path: Path) -> None:
        f = GrowableFilter(100, 0.01, seed=9)
        f.add_many(range(3000))
        g = bloomkit.loads(bloomkit.dumps(f))
        assert type(g) is GrowableFilter and g == f
        for proto in range(2, pickle.HIGHEST_PROTOCOL + 1):
            h = pickle.loads(pickle.dumps(f, protocol=proto))
            assert type(h) is GrowableFilter and h == f and h.seed == 9
        path = tmp_path / "g.bkf"
        f.save(path)
        h = bloomkit.load(path)
        assert h == f
        h.add_many(range(3000, 30_000))  # a loaded filter grows
        assert all(h.contains_many(range(30_000)))
        with pytest.raises(FormatError, match="not the expected"):
            bloomkit.BloomFilter.from_bytes(f.to_bytes())

    def test_mapped_read_only_and_never_writable(self, tmp_path: Path) -> None:
        f = GrowableFilter(100)
        f.add_many(range(1000))
        path = tmp_path / "m.bkf"
        f.save(path)
        with open(path, "r+b") as fh:
            mm = mmap.mmap(fh.fileno(), 0)
            with pytest.raises(TypeError, match="cannot be mapped for writing"):
                GrowableFilter._from_buffer(mm, writable=True)
            ro = GrowableFilter._from_buffer(mm)
            assert 5 in ro and not ro.writable and ro.mapped
            with pytest.raises(TypeError, match="read-only"):
                ro.add("b")
            ro._detach()  # keeps an owned copy
            mm.close()
        assert not ro.mapped and 5 in ro and len(ro) == len(f)


def _small_state() -> bytes:
    """A small valid state with entries of several lengths and a stash."""
    f = GrowableFilter(40, 0.5, seed=11, max_growth=1)  # max_load 0.9: the stash fills
    f.add_many(range(3000))
    return f.to_bytes()


def _resealed(data: bytearray) -> bytes:
    try:
        struct.pack_into("<Q", data, 40, checksum(bytes(data)))
    except FormatError:
        pass
    return bytes(data)


def _exercise(f: GrowableFilter) -> None:
    """A loaded object must work: queries, writes, growth and a round trip."""
    assert f.state_nbytes <= 1 << 22
    _ = [k in f for k in range(50)]
    f.contains_many(list(range(50)))
    try:
        f.add_many(range(5000))
    except CapacityError:
        pass
    g = GrowableFilter.from_bytes(f.to_bytes())
    assert g == f


class HostileBytesTests:
    def test_every_truncation_and_trailing_bytes(self) -> None:
        data = _small_state()
        for cut in list(range(0, 400)) + list(range(400, len(data), 61)):
            with pytest.raises(FormatError):
                GrowableFilter.from_bytes(data[:cut])
        for extra in (1, 8, 64):
            with pytest.raises(FormatError):
                GrowableFilter.from_bytes(data + b"\0" * extra)

    def test_every_header_bit_flip(self) -> None:
        data = _small_state()
        for i in range(HEADER_LEN * 8):
            bad = bytearray(data)
            bad[i // 8] ^= 1 << (i % 8)
            with pytest.raises(FormatError):
                GrowableFilter.from_bytes(bytes(bad))  # the checksum catches every one

    def test_resealed_parameter_values(self) -> None:
        data = _small_state()
        ints = [0, 1, 2, 13, 14, 40, 41, 2**31, 2**32 - 1]
        for off in (P + 0, P + 4, P + 8, P + 12, P + 32, P + 36):
            for v in ints:
                bad = bytearray(data)
                struct.pack_into("<I", bad, off, v)
                try:
                    f = GrowableFilter.from_bytes(_resealed(bad))
                except FormatError:
                    continue
                _exercise(f)
        for off in (P + 16, P + 40, P + 176, *(P + 48 + 8 * j for j in range(16))):
            for v in [0, 1, 2**40, 2**64 - 1]:
                bad = bytearray(data)
                struct.pack_into("<Q", bad, off, v)
                try:
                    f = GrowableFilter.from_bytes(_resealed(bad))
                except FormatError:
                    continue
                _exercise(f)
        for off in (P + 24, P + 184):
            for x in [math.nan, math.inf, -1.0, 0.0, 0.04, 1.0, 2.0]:
                bad = bytearray(data)
                struct.pack_into("<d", bad, off, x)
                try:
                    f = GrowableFilter.from_bytes(_resealed(bad))
                except FormatError:
                    continue
                _exercise(f)

    def test_payload_slots(self, rng: random.Random) -> None:
        """Random slot values, resealed: refused (unpacked bucket, an entry
        with no bit or shallower than the floor, a count that disagrees) or
        loaded and working."""
        data = _small_state()
        refused = 0
        for _ in range(300):
            bad = bytearray(data)
            pos = HEADER_LEN + 2 * rng.randrange((len(data) - HEADER_LEN) // 2)
            value = rng.choice([0, 0x8000, 1, 0x4000, rng.randrange(65536)])
            struct.pack_into("<H", bad, pos, value)
            try:
                f = GrowableFilter.from_bytes(_resealed(bad))
            except FormatError:
                refused += 1
                continue
            _exercise(f)
        assert refused > 0

    def test_deep_validation_checks_the_count(self) -> None:
        data = bytearray(_small_state())
        count = struct.unpack_from("<Q", data, P + 16)[0]
        struct.pack_into("<Q", data, P + 16, count - 1)
        with pytest.raises(FormatError, match="count"):
            GrowableFilter.from_bytes(_resealed(data))

    def test_huge_claims_are_refused_without_allocating(self) -> None:
        bad = bytearray(_small_state()[:HEADER_LEN])
        struct.pack_into("<Q", bad, 32, 2**40)
        with pytest.raises(FormatError):
            GrowableFilter.from_bytes(bytes(bad))

    def test_garbage(self, rng: random.Random) -> None:
        for n in [0, 1, 63, 64, 255, 256, 320, 1000]:
            with pytest.raises(FormatError):
                GrowableFilter.from_bytes(rng.randbytes(n))


# ---- the generic tests' recipe (tests/kind_list.py) ------------------------------------

RECIPES = [kind_list.Recipe(
    "GrowableFilter",
    hot=("add", "k"),
    merge=None,  # an entry keeps one value's bits: no union (docs/growable.md)
    threads=[kind_list.ThreadSpec("growable", lambda key: GrowableFilter(64, 0.01, key=key))],
    rewrites={"": "bloomkit.GrowableFilter(40, 0.05, seed=1)"},
    numpy=kind_list.numpy_filter(lambda: GrowableFilter(300, 0.01, seed=3)),
    arrow=kind_list.arrow_filter(lambda: GrowableFilter(100, 0.01, seed=3)),  # grows past 100
    # grown from 40 keys to 3000 (several doublings, fingerprints of several
    # lengths), and a keyed one with str keys
    golden={
        "GrowableFilter_grown": {
            "class": "GrowableFilter", "args": [40, 0.05], "kwargs": {"seed": 13},
            "keys": {"recipe": "int_range", "start": 0, "stop": 3000}},
        "GrowableFilter_keyed_str": {
            "class": "GrowableFilter", "args": [100, 0.01],
            "kwargs": {"secret": kind_list.GOLDEN_SECRET},
            "keys": {"recipe": "str_format", "format": "g{}", "start": 0, "stop": 500}},
    },
)]
