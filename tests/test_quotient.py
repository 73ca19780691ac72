"""QuotientFilter: API, model-based (R1), false-positive bound (R3), fill to the
first failure (R7), goldens (R8), hostile input (R12-R15), constructor
extremes (R19) and pickling (R21)."""

from __future__ import annotations

import copy
import hashlib
import json
import math
import pickle
import random
import struct
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import bloomkit
import kind_list
from bloomkit import (
    CapacityError,
    FormatError,
    IncompatibleFiltersError,
    QuotientFilter,
    _core,
)
from bloomkit.quotient import _q_for, quotient_shape
from key_domains import without_key_domains

np = pytest.importorskip("numpy")

GOLDEN = Path(__file__).parent / "format" / "golden"


def _reseal(data: bytearray) -> bytearray:
    data[40:48] = _core.checksum(bytes(data)).to_bytes(8, "little")
    return data


def _exercise(f: QuotientFilter) -> None:
    """A loaded filter must validate and survive every operation."""
    f.validate()
    fps = list(f)
    assert fps == sorted(fps) and len(fps) == len(f)
    "probe" in f  # noqa: B015
    f.contains_many(["a", "b", 1])
    g = f.copy()
    try:
        g.add("new-key")
        g.remove("new-key")
    except CapacityError:
        pass
    g.validate()
    assert QuotientFilter.from_bytes(f.to_bytes()) == f


class ApiTests:
    def test_shape_follows_capacity_and_error_rate(self) -> None:
        f = QuotientFilter(10_000, 0.01)
        q, r = quotient_shape(10_000, 0.01)
        assert (f.q, f.r, f.fingerprint_bits) == (q, r, q + r)
        assert f.num_slots == 2**q and 10_000 <= 0.9 * 2**q < 20_000
        assert 10_000 / 2**q * 2.0**-r <= 0.01 < 10_000 / 2**q * 2.0 ** -(r - 1)
        assert f.nbytes == math.ceil(2**q * (r + 3) / 64) * 8
        assert f.state_nbytes == len(f.to_bytes()) == 128 + f.nbytes
        assert f.capacity == 10_000 and f.error_rate == 0.01 and f.max_load == 0.9
        g = QuotientFilter(10_000, 0.01, max_load=0.5)
        assert g.q == q + 1

    def test_multiset_add_count_remove(self) -> None:
        f = QuotientFilter(100, 0.001)
        assert f.add("x") is True
        assert f.add("x") is False
        assert f.count("x") == 2 and len(f) == 2 and "x" in f
        f.remove("x")
        assert f.count("x") == 1 and "x" in f
        assert f.discard("x") is True
        assert "x" not in f and f.count("x") == 0 and len(f) == 0
        before = f.to_bytes()
        with pytest.raises(KeyError):
            f.remove("x")
        assert f.discard("x") is False
        assert f.to_bytes() == before
        f.validate()

    def test_iteration_is_sorted_fingerprints(self, rng: random.Random) -> None:
        f = QuotientFilter(2000, 0.01)
        keys = [rng.randbytes(8) for _ in range(1500)] + [b"dup"] * 3
        f.add_many(keys)
        fps = list(f)
        assert fps == sorted(f._fingerprint(k) for k in keys)
        it = iter(f)
        next(it)
        f.add("more")
        with pytest.raises(RuntimeError, match="changed"):
            next(it)

    def test_layout_depends_only_on_the_multiset(self, rng: random.Random) -> None:
        keys = list(range(3000))
        a = QuotientFilter(3000, 0.01)
        a.add_many(keys)
        rng.shuffle(keys)
        b = QuotientFilter(3000, 0.01)
        for k in keys:
            b.add(k)
        extra = list(range(10**6, 10**6 + 200))  # ints: the same key domains as `keys`
        b.add_many(extra)
        for k in extra:
            b.remove(k)
        assert a.to_bytes() == b.to_bytes()
        b.validate()

    def test_merge_equals_the_filter_built_from_both(self, rng: random.Random) -> None:
        ka = [rng.randrange(2**40) for _ in range(700)]
        kb = [rng.randrange(2**40) for _ in range(900)] + ka[:100]
        a, b = QuotientFilter(1000, 0.01, seed=4), QuotientFilter(1000, 0.01, seed=4)
        a.add_many(ka)
        b.add_many(kb)
        m = a | b
        assert m == a.merge(b) == b.merge(a)
        assert m.capacity == 2000 and m.fingerprint_bits == a.fingerprint_bits
        assert m.q == a.q + 1 and m.r == a.r - 1
        ref = QuotientFilter.with_shape(
            m.q, m.r, capacity=m.capacity, error_rate=m.error_rate, seed=4
        )
        ref.add_many(kb + ka)
        assert m.to_bytes() == ref.to_bytes()
        assert len(m) == len(ka) + len(kb) and all(m.contains_many(ka + kb))
        m.validate()

    def test_merge_mismatches_raise(self) -> None:
        a = QuotientFilter(1000, 0.01)
        for other, what in [
            (QuotientFilter(1000, 0.01, seed=1), "seed"),
            (QuotientFilter(1000, 0.01, secret=b"k" * 16), "hashing"),
            (QuotientFilter(1000, 0.0001), "fingerprint"),
        ]:
            with pytest.raises(IncompatibleFiltersError, match=what):
                a | other
        with pytest.raises(TypeError):
            a | {1, 2}  # type: ignore[operator]
        with pytest.raises(TypeError):
            a.merge(bloomkit.BloomFilter(10, 0.1))  # type: ignore[arg-type]

    def test_resized_keeps_membership_and_moves_a_bit(self) -> None:
        f = QuotientFilter(1000, 0.01)
        keys = [f"key-{i}" for i in range(900)]
        f.add_many(keys)
        g = f.resized(4000)
        assert g.q == f.q + 2 and g.r == f.r - 2 and g.capacity == 4000
        assert list(g) == list(f) and all(g.contains_many(keys))
        g.validate()
        ref = QuotientFilter.with_shape(g.q, g.r, capacity=4000, error_rate=g.error_rate)
        ref.add_many(keys)
        assert ref.to_bytes() == g.to_bytes()
        back = g.resized(1000)  # shrinking keeps the fingerprints too
        assert back == f
        with pytest.raises(ValueError, match="fingerprints"):
            f.resized(2**40)

    def test_add_many_is_all_or_nothing(self) -> None:
        f = QuotientFilter.with_shape(6, 8)  # 63 fingerprints fit
        f.add_many(range(50))
        before = f.to_bytes()
        with pytest.raises(CapacityError):
            f.add_many(list(range(100, 120)))  # known length: refused up front
        assert f.to_bytes() == before
        with pytest.raises(CapacityError):
            f.add_many(i for i in range(100, 120))  # iterator: rolled back
        assert f.to_bytes() == before

        def bad_key(k: object) -> object:
            if k == 7:
                raise RuntimeError("boom")
            return k

        g = QuotientFilter(100, 0.01, key=bad_key)
        g.add_many([1, 2])
        snap = g.to_bytes()
        with pytest.raises(RuntimeError, match="boom"):
            g.add_many(iter(range(3, 10)))
        assert g.to_bytes() == snap
        assert f.add_many(np.arange(200, 213, dtype=np.int64)) == 13
        assert len(f) == 63
        f.validate()

    def test_contains_many_matches_per_item(self, rng: random.Random) -> None:
        f = QuotientFilter(5000, 0.01)
        keys = np.array([rng.randrange(2**62) for _ in range(4000)], dtype=np.int64)
        f.add_many(keys)
        probes = np.concatenate([keys, keys + 1])
        got = f.contains_many(probes)
        assert got.dtype == np.bool_ and got[:4000].all()
        assert list(got) == [int(k) in f for k in probes]
        assert f.contains_many([int(k) for k in probes[:50]]) == [True] * 50

    def test_load_factor_clear_copy_equality(self) -> None:
        f = QuotientFilter(100, 0.01)
        f.add_many(range(64))
        assert f.load_factor == 64 / f.num_slots
        g = copy.copy(f)
        assert g == f and g is not f
        f.clear()
        assert len(f) == 0 and f.load_factor == 0 and list(f) == [] and f != g
        f.validate()
        assert f.estimate_error_rate() == 0.0
        assert 0 < g.estimate_error_rate() < 0.01

    def test_repr_and_properties(self) -> None:
        f = QuotientFilter(10, 0.1)
        assert "QuotientFilter" in repr(f) and "load_factor" in repr(f)
        assert not f.keyed and not f.mapped and f.writable and f.key is None
        with pytest.raises(TypeError):
            hash(f)

    def test_secret(self) -> None:
        secret = bytes(range(16))
        f = QuotientFilter(100, 0.01, secret=secret)
        f.add("k")
        assert f.keyed and "k" in f
        data = f.to_bytes()
        assert secret not in data
        assert QuotientFilter.from_bytes(data, secret=secret) == f
        with pytest.raises(ValueError, match="keyed"):
            QuotientFilter.from_bytes(data)
        with pytest.raises(ValueError, match="wrong secret"):
            QuotientFilter.from_bytes(data, secret=b"x" * 16)
        with pytest.raises(TypeError, match="pickle"):
            pickle.dumps(f)

    def test_loads_save_load(self, tmp_path: Path) -> None:
        f = QuotientFilter(100, 0.01)
        f.add_many(["a", "b", "a"])
        g = bloomkit.loads(bloomkit.dumps(f))
        assert type(g) is QuotientFilter and g == f and g.count("a") == 2
        f.save(tmp_path / "q.bkf")
        h = bloomkit.load(tmp_path / "q.bkf")
        assert h == f and type(h) is QuotientFilter
        with pytest.raises(FormatError, match="not the expected"):
            QuotientFilter.from_bytes(bloomkit.BloomFilter(10, 0.1).to_bytes())
        with pytest.raises(FormatError, match="not the expected"):
            bloomkit.BloomFilter.from_bytes(f.to_bytes())

    def test_in_place_buffer(self, tmp_path: Path) -> None:
        import mmap

        f = QuotientFilter(100, 0.01)
        f.add("a")
        path = tmp_path / "q.bkf"
        f.save(path)
        with open(path, "r+b") as fh, mmap.mmap(fh.fileno(), 0) as mm:
            rw = QuotientFilter._from_buffer(mm, writable=True)
            assert rw.mapped and "a" in rw
            rw.add("b")
            rw._seal()
            rw._detach()
            assert not rw.mapped and len(rw) == 0
        g = bloomkit.load(path)
        assert "b" in g and "a" in g
        g.validate()
        ro = QuotientFilter._from_buffer(g.to_bytes())
        with pytest.raises(TypeError, match="read-only"):
            ro.add("c")
        with pytest.raises(TypeError, match="read-only"):
            ro.remove("a")

    def test_pickle_goes_through_from_bytes(self) -> None:
        f = QuotientFilter(1000, 0.01, seed=9)
        f.add_many(range(100))
        for proto in range(2, pickle.HIGHEST_PROTOCOL + 1):
            g = pickle.loads(pickle.dumps(f, protocol=proto))
            assert type(g) is QuotientFilter and g == f and g.seed == 9
        data = bytearray(f.to_bytes())
        data[200] ^= 1
        blob = pickle.dumps(f).replace(f.to_bytes(), bytes(data))
        with pytest.raises(FormatError):
            pickle.loads(blob)


class CapacityTests:
    """R7: insert until the first failure; the failure changes nothing."""

    @pytest.mark.parametrize("q,r", [(4, 3), (10, 6), (9, 1)])
    def test_fill_to_the_first_failure(self, q: int, r: int) -> None:
        f = QuotientFilter.with_shape(q, r, seed=q)
        accepted: list[int] = []
        i = 0
        while True:
            before = f.to_bytes()
            try:
                f.add(i * 2654435761)
            except CapacityError:
                assert f.to_bytes() == before
                break
            accepted.append(i * 2654435761)
            i += 1
        assert len(accepted) == 2**q - 1 == len(f)
        assert f.load_factor == (2**q - 1) / 2**q
        f.validate()
        assert all(k in f for k in accepted)
        with pytest.raises(CapacityError):
            f.add_many(["one more"])
        assert f.to_bytes() == before
        absent = next(f"absent-{j}" for j in range(10**6) if f"absent-{j}" not in f)
        with pytest.raises(KeyError):
            f.remove(absent)
        assert f.to_bytes() == before
        if r > 1:
            g = f.resized(2**q)
            assert g.q == q + 1 and g.r == r - 1
            g.validate()
            assert all(g.contains_many(accepted)) and list(g) == list(f)
            g.add("room again")


# ---- R3: false-positive bound ---------------------------------------------------


@pytest.mark.parametrize("n", [1_000, 100_000, 1_000_000])
@pytest.mark.parametrize("p", [0.1, 0.01, 0.001, 0.0001])
def test_false_positive_rate_bound(n: int, p: float) -> None:
    gen = np.random.default_rng(n * 7 + int(1 / p))
    f = QuotientFilter(n, p, seed=n)
    keys = gen.integers(0, 2**62, n, dtype=np.int64)
    f.add_many(keys)
    assert f.contains_many(keys).all()
    probes_n = int(max(1_000_000, 100 / p))
    probes = gen.integers(2**62, 2**63 - 1, probes_n, dtype=np.int64)
    observed = int(f.contains_many(probes).sum()) / probes_n
    bound = 1.05 * p + 5 * math.sqrt(p / probes_n)
    assert observed <= bound, (observed, bound)


# ---- R8: golden files -----------------------------------------------------------


def _keys(spec: dict[str, Any]) -> list[object]:
    rng = range(spec["start"], spec["stop"], spec.get("step", 1))
    if spec["type"] == "int":
        return list(rng)
    return [spec["template"].format(i) for i in rng]


def build_from_recipe(build: dict[str, Any]) -> QuotientFilter:
    secret = bytes.fromhex(build["secret"]) if build.get("secret") else None
    f = QuotientFilter(
        build["capacity"], build["error_rate"], seed=build["seed"], secret=secret
    )
    for spec in build.get("adds", []):
        f.add_many(_keys(spec))
    for spec in build.get("removes", []):
        for k in _keys(spec):
            f.remove(k)
    if "merge_with" in build:
        f = f | build_from_recipe(build["merge_with"])
    if "resize" in build:
        f = f.resized(build["resize"])
    return f


def _goldens() -> list[Path]:
    return sorted(GOLDEN.glob("QuotientFilter_*.json"))


def test_goldens_exist() -> None:
    assert len(_goldens()) >= 3


@pytest.mark.parametrize("manifest", _goldens(), ids=lambda p: p.stem)
def test_golden(manifest: Path) -> None:
    man = json.loads(manifest.read_text())
    data = manifest.with_suffix(".bkf").read_bytes()
    assert hashlib.sha256(data).hexdigest() == man["sha256"]
    build = man["build"]
    secret = bytes.fromhex(build["secret"]) if build.get("secret") else None
    f = bloomkit.loads(data, secret=secret)
    assert type(f).__name__ == man["class"]
    f.validate()
    assert all(f.contains_many(man["members"]))
    probes = _keys(man["probes"]["recipe"])
    assert sum(f.contains_many(probes)) == man["probes"]["false_positives"]
    assert without_key_domains(build_from_recipe(build)) == data  # goldens predate the record


# ---- R12-R15: hostile input -----------------------------------------------------


def _small() -> bytes:
    f = QuotientFilter.with_shape(4, 5, seed=3)
    f.add_many(range(11))
    f.add(3)
    return f.to_bytes()


class HostileBytesTests:
    def test_every_truncation_and_trailing_bytes(self) -> None:
        data = _small()
        for cut in range(len(data)):
            with pytest.raises(FormatError):
                QuotientFilter.from_bytes(data[:cut])
        for extra in range(1, 17):
            with pytest.raises(FormatError):
                QuotientFilter.from_bytes(data + b"\0" * extra)

    def test_every_bit_flip(self) -> None:
        data = _small()
        for i in range(len(data) * 8):
            bad = bytearray(data)
            bad[i // 8] ^= 1 << (i % 8)
            with pytest.raises(FormatError):
                QuotientFilter.from_bytes(bytes(bad))

    def test_every_payload_bit_flip_with_checksum_recomputed(self) -> None:
        """The deep validator catches every broken metadata invariant."""
        data = _small()
        caught = 0
        for i in range(128 * 8, len(data) * 8):
            bad = bytearray(data)
            bad[i // 8] ^= 1 << (i % 8)
            try:
                f = QuotientFilter.from_bytes(bytes(_reseal(bad)))
            except FormatError:
                caught += 1
                continue
            _exercise(f)  # a remainder flip can give another valid table
        assert caught > 0

    def test_every_header_byte_value(self) -> None:
        data = _small()
        for pos in range(128):
            for value in range(256):
                bad = bytearray(data)
                if bad[pos] == value:
                    continue
                bad[pos] = value
                try:
                    _reseal(bad)
                    f = QuotientFilter.from_bytes(bytes(bad))
                except ValueError:  # FormatError, or a keyed file without its secret
                    continue
                _exercise(f)
                assert f.state_nbytes == len(data)

    @pytest.mark.parametrize(
        "off,size",
        [(8, 2), (10, 2), (12, 2), (14, 2), (16, 2), (18, 2), (20, 4), (24, 8), (32, 8),
         (48, 4), (52, 4), (56, 8), (64, 4), (68, 4), (72, 8), (96, 8), (104, 8)],
    )
    def test_integer_fields(self, off: int, size: int) -> None:
        data = _small()
        for v in [0, 1, 2**31 - 1, 2**32, 2**63, 2**64 - 1]:
            bad = bytearray(data)
            bad[off : off + size] = (v % 2 ** (8 * size)).to_bytes(size, "little")
            try:
                _reseal(bad)
                f = QuotientFilter.from_bytes(bytes(bad))
            except ValueError:
                continue
            _exercise(f)
            assert f.state_nbytes == len(data)

    @pytest.mark.parametrize("off", [80, 88])
    def test_float_fields(self, off: int) -> None:
        data = _small()
        for v in [math.nan, math.inf, -math.inf, -0.0, 5e-324, 1.0, 2.0]:
            bad = bytearray(data)
            bad[off : off + 8] = struct.pack("<d", v)
            try:
                f = QuotientFilter.from_bytes(bytes(_reseal(bad)))
            except FormatError:
                continue
            assert 0 < f.error_rate < 1 and 0 < f.max_load <= 1
            _exercise(f)

    def test_huge_claims_are_refused_without_allocating(self) -> None:
        bad = bytearray(_small()[:128])
        bad[32:40] = (2**40).to_bytes(8, "little")
        with pytest.raises(FormatError, match="truncated"):
            QuotientFilter.from_bytes(bytes(bad))
        bad = bytearray(_small())
        bad[64:68] = (44).to_bytes(4, "little")  # q = 44: 2**44 slots
        with pytest.raises(FormatError):
            QuotientFilter.from_bytes(bytes(_reseal(bad)))

    def test_corrupt_table_without_verification_stays_bounded(self) -> None:
        """verify=False skips the deep scan: operations must still terminate."""
        f = QuotientFilter.with_shape(3, 4)
        f.add_many(range(7))
        bad = bytearray(f.to_bytes())
        bad[128 : 128 + f.nbytes] = b"\xff" * f.nbytes  # every slot shifted: no empty slot
        g = QuotientFilter._from_buffer(bad, writable=True)
        "x" in g  # noqa: B015
        g.count("x")
        list(g)
        with pytest.raises(FormatError):
            g.validate()
        for k in range(5):
            try:
                g.add(k)
            except (CapacityError, FormatError):
                pass
            g.discard(k)

    def test_garbage(self, rng: random.Random) -> None:
        for n in [0, 1, 63, 64, 127, 128, 200, 1000]:
            with pytest.raises(FormatError):
                QuotientFilter.from_bytes(rng.randbytes(n))
        with pytest.raises(TypeError):
            QuotientFilter.from_bytes("not bytes")  # type: ignore[arg-type]


class ConstructorTests:
    """R19: extremes give a bounded object or a clean error."""

    @pytest.mark.parametrize("capacity", [0, 1, 2**32, 2**63, 2**64 - 1, -1])
    @pytest.mark.parametrize(
        "error_rate", [0, 1, -0.0, math.nan, math.inf, -math.inf, 1e-300, 0.9999999999999999]
    )
    def test_extremes(self, capacity: int, error_rate: float) -> None:
        try:
            q, r = quotient_shape(capacity, error_rate)
        except (ValueError, TypeError):
            with pytest.raises((ValueError, TypeError)):
                QuotientFilter(capacity, error_rate)
            return
        assert 2**q * (r + 3) <= 2**46 and q + r <= 64
        if 2**q * (r + 3) <= 2**28:
            f = QuotientFilter(capacity, error_rate)
            assert (f.q, f.r) == (q, r)

    def test_argument_types(self) -> None:
        for bad in [1.5, "100", None, True]:
            with pytest.raises(TypeError):
                QuotientFilter(bad, 0.01)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            QuotientFilter(100, "0.01")  # type: ignore[arg-type]
        for load in [0, -0.5, 1.5, math.nan]:
            with pytest.raises(ValueError, match="max_load"):
                QuotientFilter(100, 0.01, max_load=load)
        for seed in [-1, 2**64]:
            with pytest.raises(ValueError, match="seed"):
                QuotientFilter(100, 0.01, seed=seed)
        with pytest.raises(TypeError, match="key"):
            QuotientFilter(100, 0.01, key=3)
        for q, r in [(0, 4), (45, 4), (4, 0), (4, 62), (40, 30)]:
            with pytest.raises(ValueError):
                QuotientFilter.with_shape(q, r)
        assert QuotientFilter(100, 0.01, seed=2**64 - 1).seed == 2**64 - 1


class MaxLoadBoundTests:
    """#23.8: max_load is bounded to [0.01, 1] everywhere; 5e-324 used to raise
    OverflowError from the constructor, and a checksummed file holding it
    loaded, then resized() / merge() / | raised OverflowError."""

    TINY = (5e-324, 1e-300, 1e-5, 0.0099999)

    @pytest.mark.parametrize("load", TINY)
    def test_constructors_refuse_with_the_range(self, load: float) -> None:
        with pytest.raises(ValueError, match=r"0\.01 <= max_load <= 1"):
            QuotientFilter(100, 0.01, max_load=load)
        with pytest.raises(ValueError, match=r"0\.01 <= max_load <= 1"):
            QuotientFilter.with_shape(5, 5, max_load=load)
        with pytest.raises(ValueError, match=r"0\.01 <= max_load <= 1"):
            quotient_shape(100, 0.01, load)
        with pytest.raises(ValueError, match=r"\[0\.01, 1\]"):
            _core.QuotientBase(5, 5, 10, 0.01, load)

    @pytest.mark.parametrize("load", TINY)
    def test_files_are_refused_with_the_range(self, load: float) -> None:
        bad = bytearray(_small())
        bad[88:96] = struct.pack("<d", load)
        with pytest.raises(FormatError, match=r"max_load must be in \[0\.01, 1\]"):
            QuotientFilter.from_bytes(bytes(_reseal(bad)))
        with pytest.raises(FormatError, match="max_load"):
            bloomkit.loads(bytes(bad))

    def test_the_smallest_load_resizes_and_merges(self) -> None:
        f = QuotientFilter(100, 0.01, max_load=0.01, seed=5)
        assert f.max_load == 0.01 and f.num_slots >= 100 / 0.01
        f.add_many(range(100))
        g = bloomkit.loads(f.to_bytes())
        assert g == f
        assert all(k in g.resized(150) for k in range(100))
        h = QuotientFilter(100, 0.01, max_load=0.01, seed=5)
        h.add_many(range(100, 150))
        for m in (g.merge(h), g | h):
            assert all(k in m for k in range(150))


# ---- R1: model-based ------------------------------------------------------------

keys_st = st.one_of(st.integers(min_value=-50, max_value=50), st.text(max_size=3))


class QuotientMachine(RuleBasedStateMachine):
    """The filter is exactly the Counter of its keys' fingerprints."""

    def __init__(self) -> None:
        super().__init__()
        self.f = QuotientFilter.with_shape(4, 5, seed=11)  # 15 fingerprints of 9 bits
        self.keys: Counter[object] = Counter()
        self.snapshots: list[tuple[QuotientFilter, Counter[object]]] = []

    def fp(self, k: object) -> int:
        return self.f._fingerprint(k)

    def fps(self) -> Counter[int]:
        c: Counter[int] = Counter()
        for k, n in self.keys.items():
            c[self.fp(k)] += n
        return c

    def room(self) -> int:
        return self.f.num_slots - 1 - self.keys.total()

    @rule(k=keys_st)
    def add(self, k: object) -> None:
        before = self.f.to_bytes()
        if self.room() == 0:
            with pytest.raises(CapacityError):
                self.f.add(k)
            assert self.f.to_bytes() == before
            return
        assert self.f.add(k) == (self.fps()[self.fp(k)] == 0)
        self.keys[k] += 1

    @rule(ks=st.lists(keys_st, max_size=6), as_iter=st.booleans())
    def add_many(self, ks: list[object], as_iter: bool) -> None:
        before = self.f.to_bytes()
        arg: Any = iter(ks) if as_iter else ks
        if len(ks) > self.room():
            with pytest.raises(CapacityError):
                self.f.add_many(arg)
            assert self.f.to_bytes() == before
            return
        self.f.add_many(arg)
        self.keys.update(ks)

    @precondition(lambda self: self.keys)
    @rule(data=st.data())
    def remove_present(self, data: st.DataObject) -> None:
        k = data.draw(st.sampled_from(sorted(self.keys, key=repr)))
        self.f.remove(k)
        self.keys[k] -= 1
        if not self.keys[k]:
            del self.keys[k]

    @rule(k=keys_st)
    def remove_absent(self, k: object) -> None:
        if self.fps()[self.fp(k)]:
            return  # would take a colliding key's copy: not a model operation
        before = self.f.to_bytes()
        with pytest.raises(KeyError):
            self.f.remove(k)
        assert self.f.to_bytes() == before

    @rule(k=keys_st)
    def count(self, k: object) -> None:
        assert self.f.count(k) == self.fps()[self.fp(k)]

    @rule()
    def snapshot(self) -> None:
        self.snapshots.append((self.f.copy(), Counter(self.keys)))

    @precondition(lambda self: self.snapshots)
    @rule()
    def merge_snapshot(self) -> None:
        other, keys = self.snapshots.pop()
        total = self.keys.total() + keys.total()
        q = max(self.f.q, other.q, _q_for(self.f.capacity + other.capacity, 0.9))
        q = min(q, self.f.fingerprint_bits - 1)
        try:
            merged = self.f | other
        except CapacityError:
            assert total > 2**q - 1
            return
        assert merged.q == q
        assert merged.fingerprint_bits == self.f.fingerprint_bits
        self.f = merged
        self.keys += keys

    @precondition(lambda self: self.f.r > 1)
    @rule()
    def grow(self) -> None:
        g = self.f.resized(self.f.num_slots)  # needs 2**(q+1) at max_load 0.9
        assert g.q == self.f.q + 1
        self.f = g

    @rule()
    def round_trip(self) -> None:
        self.f = bloomkit.loads(self.f.to_bytes())

    @rule()
    def round_trip_pickle(self) -> None:
        self.f = pickle.loads(pickle.dumps(self.f))

    @rule()
    def clear(self) -> None:
        self.f.clear()
        self.keys.clear()

    @invariant()
    def matches_the_model(self) -> None:
        self.f.validate()
        assert len(self.f) == self.keys.total()
        assert list(self.f) == sorted(self.fps().elements())
        assert all(self.f.contains_many(list(self.keys)))


TestQuotientMachine = QuotientMachine.TestCase
TestQuotientMachine.settings = settings(max_examples=80, stateful_step_count=40, deadline=None)


# ---- the generic tests' recipe (tests/kind_list.py) ------------------------------------

RECIPES = [kind_list.Recipe(
    "QuotientFilter",
    hot=("count", "k"),
    merge=lambda a, b: a | b,
    threads=[kind_list.ThreadSpec(
        "quotient", lambda key: QuotientFilter(60_000, 0.01, key=key), removes=True,
        unite=lambda f, g: f.merge(g))],  # a new filter: f is only read
    rewrites={"": "bloomkit.QuotientFilter(300, 0.01, seed=1)"},
    numpy=kind_list.numpy_filter(lambda: QuotientFilter(3000, 0.01, seed=3)),
    arrow=kind_list.arrow_filter(lambda: QuotientFilter(3000, 0.01, seed=3)),
)]  # its goldens (quotient_*) were written by hand before make_golden.py
