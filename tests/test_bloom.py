"""BloomFilter and BlockedBloomFilter: API, model-based (R1), size sweep (R2),
false-positive bound (R3), constructor extremes (R19), pickling (R21) and
hostile from_bytes input."""

from __future__ import annotations

import copy
import math
import pickle
import random

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import bloomkit
import kind_list
from bloomkit import (
    BlockedBloomFilter,
    BloomFilter,
    FormatError,
    IncompatibleFiltersError,
    design,
)

np = pytest.importorskip("numpy")

CLASSES = [BloomFilter, BlockedBloomFilter]


@pytest.fixture(params=CLASSES, ids=["classic", "blocked"])
def cls(request: pytest.FixtureRequest) -> type[BloomFilter]:
    c: type[BloomFilter] = request.param
    return c


def _block_mean_rate(f: BlockedBloomFilter) -> float:
    """(1/b) sum over blocks of (popcount / 512) ** k, from the payload bytes."""
    payload = np.frombuffer(f.to_bytes(), dtype=np.uint8)[128:]
    counts = np.unpackbits(payload).reshape(-1, 512).sum(axis=1)
    return float(np.mean((counts / 512.0) ** f.num_hashes))


class ApiTests:
    def test_sizes_follow_the_design(self, cls: type[BloomFilter]) -> None:
        f = cls(50_000, 0.01)
        d = design(50_000, 0.01, f.layout)
        assert (f.num_bits, f.num_hashes, f.nbytes) == (d.num_bits, d.num_hashes, d.nbytes)
        assert f.capacity == 50_000 and f.error_rate == 0.01 and f.seed == 0
        assert f.state_nbytes == len(f.to_bytes()) == 128 + f.nbytes

    def test_add_reports_new_keys(self, cls: type[BloomFilter]) -> None:
        f = cls(1000, 0.001)
        assert f.add("x") is True
        assert f.add("x") is False
        assert "x" in f and len(f) == 1
        assert f.add_many(["x", "y", "z"]) == 2
        assert len(f) == 3

    def test_set_operations(self, cls: type[BloomFilter]) -> None:
        a, b = cls(1000, 0.01, seed=3), cls(1000, 0.01, seed=3)
        a.add_many(range(0, 300))
        b.add_many(range(200, 500))
        u = a | b
        assert all(k in u for k in range(500))
        assert u == a.union(b) == b.union(a)
        i = a & b
        assert all(k in i for k in range(200, 300))
        assert i == a.intersection(b)
        c = a.copy()
        c |= b
        assert c == u and c is not a
        c &= a
        assert c.bits_set <= u.bits_set
        both = cls(1000, 0.01, seed=3)
        both.add_many(range(500))
        assert u == both  # union of halves == build of the whole

    def test_mismatches_raise(self, cls: type[BloomFilter]) -> None:
        a = cls(1000, 0.01)
        for other, what in [
            (cls(2000, 0.01), "size"),
            (cls(1000, 0.01, seed=1), "seed"),
            (cls(1000, 0.01, secret=b"k" * 16), "hashing"),
        ]:
            with pytest.raises(IncompatibleFiltersError, match=what):
                a | other
        other_cls = BlockedBloomFilter if cls is BloomFilter else BloomFilter
        with pytest.raises(IncompatibleFiltersError, match="layouts"):
            a.union(other_cls(1000, 0.01))
        with pytest.raises(IncompatibleFiltersError, match="num_hashes"):
            cls.with_size(a.num_bits, a.num_hashes + 1) | a
        with pytest.raises(TypeError):
            a | {1, 2}  # type: ignore[operator]
        assert a != {1}

    def test_clear_copy_equality(self, cls: type[BloomFilter]) -> None:
        f = cls(100, 0.01)
        f.add_many(["a", "b"])
        g = copy.copy(f)
        assert g == f
        f.clear()
        assert len(f) == 0 and f.bits_set == 0 and "a" not in f
        assert g != f and "a" in g

    def test_estimates(self, cls: type[BloomFilter]) -> None:
        f = cls(100_000, 0.01)
        f.add_many(range(50_000))
        assert f.estimate_count() == pytest.approx(50_000, rel=0.03)
        assert 0 < f.fill_ratio < 0.6
        if cls is BloomFilter:
            assert f.estimate_error_rate() == pytest.approx(f.fill_ratio**f.num_hashes)
        else:  # the mean over blocks of (block fill) ** k: see EstimateTests
            assert f.estimate_error_rate() == pytest.approx(_block_mean_rate(f), rel=1e-12)
            assert f.estimate_error_rate() > 1.2 * f.fill_ratio**f.num_hashes
        assert f.estimate_error_rate() < 0.01

    def test_with_size(self, cls: type[BloomFilter]) -> None:
        f = cls.with_size(10_000, 7)
        assert f.num_bits == (10_000 if cls is BloomFilter else 10_240)
        assert f.num_hashes == 7
        for bad in [(0, 3), (100, 0), (100, 99), (2**47, 3)]:
            with pytest.raises(ValueError):
                cls.with_size(*bad)
        with pytest.raises(TypeError):
            cls.with_size(100.0, 3)  # type: ignore[arg-type]

    def test_repr_and_properties(self, cls: type[BloomFilter]) -> None:
        f = cls(10, 0.1)
        r = repr(f)
        assert cls.__name__ in r and "num_bits" in r
        assert f.layout == ("classic" if cls is BloomFilter else "blocked")
        assert not f.keyed and not f.mapped and f.writable
        with pytest.raises(TypeError):
            hash(f)

    def test_secret(self, cls: type[BloomFilter]) -> None:
        secret = bytes(range(16))
        f = cls(100, 0.01, secret=secret)
        f.add("k")
        assert f.keyed and "k" in f
        data = f.to_bytes()
        assert secret not in data
        g = cls.from_bytes(data, secret=secret)
        assert "k" in g and g == f
        with pytest.raises(ValueError, match="keyed"):
            cls.from_bytes(data)
        with pytest.raises(ValueError, match="wrong secret"):
            cls.from_bytes(data, secret=b"x" * 16)
        with pytest.raises(ValueError, match="16 bytes"):
            cls(100, 0.01, secret=b"short")
        with pytest.raises(TypeError, match="pickle"):
            pickle.dumps(f)
        plain = cls(100, 0.01)
        plain.add("k")
        assert plain.to_bytes()[128:] != data[128:]  # keyed hashing differs

    def test_loads_returns_the_right_class(self, cls: type[BloomFilter]) -> None:
        f = cls(100, 0.01)
        f.add("a")
        g = bloomkit.loads(bloomkit.dumps(f))
        assert type(g) is cls and g == f
        other = BlockedBloomFilter if cls is BloomFilter else BloomFilter
        with pytest.raises(FormatError, match="not the expected"):
            other.from_bytes(f.to_bytes())

    def test_read_only_buffer_filters(self, cls: type[BloomFilter]) -> None:
        f = cls(100, 0.01)
        f.add("a")
        buf = bytearray(f.to_bytes())
        ro = cls._from_buffer(bytes(buf))
        assert "a" in ro and not ro.writable
        with pytest.raises(TypeError, match="read-only"):
            ro.add("b")
        rw = cls._from_buffer(buf, writable=True)
        rw.add("b")
        assert "b" in cls.from_bytes(rw.to_bytes())


class PickleTests:
    def test_pickle_round_trip_goes_through_from_bytes(self, cls: type[BloomFilter]) -> None:
        f = cls(1000, 0.01, seed=9)
        f.add_many(range(100))
        for proto in range(2, pickle.HIGHEST_PROTOCOL + 1):
            g = pickle.loads(pickle.dumps(f, protocol=proto))
            assert type(g) is cls and g == f and len(g) == len(f) and g.seed == 9

    def test_corrupt_pickle_is_a_format_error(self, cls: type[BloomFilter]) -> None:
        f = cls(1000, 0.01)
        data = bytearray(f.to_bytes())
        data[200] ^= 1
        blob = pickle.dumps(f).replace(f.to_bytes(), bytes(data))
        with pytest.raises(FormatError):
            pickle.loads(blob)


class HostileBytesTests:
    def test_every_truncation_and_trailing_bytes(self, cls: type[BloomFilter]) -> None:
        f = cls(40, 0.1)
        f.add_many(range(10))
        data = f.to_bytes()
        for cut in range(len(data)):
            with pytest.raises(FormatError):
                cls.from_bytes(data[:cut])
        for extra in range(1, 17):
            with pytest.raises(FormatError):
                cls.from_bytes(data + b"\0" * extra)

    def test_every_bit_flip(self, cls: type[BloomFilter]) -> None:
        f = cls(40, 0.1)
        f.add_many(range(10))
        data = f.to_bytes()
        for i in range(len(data) * 8):
            bad = bytearray(data)
            bad[i // 8] ^= 1 << (i % 8)
            with pytest.raises(FormatError):
                cls.from_bytes(bytes(bad))

    def test_garbage(self, cls: type[BloomFilter], rng: random.Random) -> None:
        for n in [0, 1, 63, 64, 127, 128, 200, 1000]:
            with pytest.raises(FormatError):
                cls.from_bytes(rng.randbytes(n))
        with pytest.raises(TypeError):
            cls.from_bytes("not bytes")  # type: ignore[arg-type]


class ConstructorTests:
    """R19: extremes give a bounded object or a clean error."""

    @pytest.mark.parametrize("capacity", [0, 1, 2**32, 2**63, 2**64 - 1, -1])
    @pytest.mark.parametrize(
        "error_rate", [0, 1, -0.0, math.nan, math.inf, -math.inf, 1e-300, 0.9999999999999999]
    )
    def test_extremes(self, cls: type[BloomFilter], capacity: int, error_rate: float) -> None:
        try:
            f = cls(capacity, error_rate)
        except (ValueError, TypeError):
            return
        assert f.nbytes <= 2**28  # anything accepted here is small (capacity 1)

    def test_argument_types(self, cls: type[BloomFilter]) -> None:
        for bad in [1.5, "100", None, True]:
            with pytest.raises(TypeError):
                cls(bad, 0.01)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            cls(100, "0.01")  # type: ignore[arg-type]
        for seed in [-1, 2**64]:
            with pytest.raises(ValueError, match="seed"):
                cls(100, 0.01, seed=seed)
        with pytest.raises(TypeError, match="seed"):
            cls(100, 0.01, seed=1.0)  # type: ignore[arg-type]
        f = cls(100, 0.01, seed=2**64 - 1)
        assert f.seed == 2**64 - 1


# ---- R2: size sweep ------------------------------------------------------------


def _sizes() -> list[int]:
    sizes = list(range(1, 11))
    n = 10.0
    while n * 1.25 <= 1_000_000:
        n *= 1.25
        sizes.append(int(n))
    return sizes


def _key_shapes(n: int, rng: random.Random) -> dict[str, list[object]]:
    return {
        "seq_int": list(range(n)),
        "neg_int": list(range(-1, -n - 1, -1)),
        "random_bytes": [rng.randbytes(rng.randrange(4, 40)) for _ in range(min(n, 20_000))],
        "short_bytes": [
            i.to_bytes(3, "little")[: 1 + i % 3] + bytes([i % 7]) for i in range(min(n, 20_000))
        ],
        "kib_keys": [
            bytes([i % 256]) * 1024 + i.to_bytes(4, "little") for i in range(min(n, 2000))
        ],
        "long_prefix": [
            "https://example.com/a/very/long/shared/prefix/" + str(i) for i in range(min(n, 50_000))
        ],
        "non_ascii": [f"ключ-{i}-日本-🎉" for i in range(min(n, 20_000))],
    }


def test_size_sweep_has_no_false_negatives(cls: type[BloomFilter], rng: random.Random) -> None:
    for n in _sizes():
        f = cls(n, 0.01)
        keys = np.arange(n, dtype=np.int64) * 7919 - 3
        f.add_many(keys)
        assert f.contains_many(keys).all(), n
    for shape, keys in _key_shapes(3000, rng).items():
        f = cls(len(keys), 0.01)
        f.add_many(keys)
        assert all(f.contains_many(keys)), shape
        assert all(k in f for k in keys), shape


# ---- R3: false-positive bound ---------------------------------------------------


@pytest.mark.parametrize("n", [1_000, 100_000, 1_000_000])
@pytest.mark.parametrize("p", [0.1, 0.01, 0.001, 0.0001])
def test_false_positive_rate_bound(cls: type[BloomFilter], n: int, p: float) -> None:
    gen = np.random.default_rng(n * 7 + int(1 / p))
    f = cls(n, p, seed=n)
    keys = gen.integers(0, 2**62, n, dtype=np.int64)
    f.add_many(keys)
    assert f.contains_many(keys).all()
    probes_n = int(max(1_000_000, 100 / p))
    probes = gen.integers(2**62, 2**63 - 1, probes_n, dtype=np.int64)
    observed = int(f.contains_many(probes).sum()) / probes_n
    bound = 1.05 * p + 5 * math.sqrt(p / probes_n)
    assert observed <= bound, (observed, bound)


def test_false_positive_rate_str_keys(cls: type[BloomFilter]) -> None:
    n, p = 200_000, 0.01
    f = cls(n, p)
    f.add_many([f"member-{i}" for i in range(n)])
    probes = [f"absent-{i}" for i in range(1_000_000)]
    observed = sum(f.contains_many(probes)) / len(probes)
    assert observed <= 1.05 * p + 5 * math.sqrt(p / len(probes))


def test_space_targets() -> None:
    assert BloomFilter(10**6, 0.01).num_bits / 10**6 == pytest.approx(9.585, abs=0.01)
    assert BloomFilter(10**6, 0.001).num_bits / 10**6 == pytest.approx(14.38, abs=0.01)
    assert BlockedBloomFilter(10**6, 0.01).num_bits / 10**6 <= 10.6
    assert BlockedBloomFilter(10**6, 0.001).num_bits / 10**6 <= 17.0


# ---- R1: model-based ------------------------------------------------------------

keys_st = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.text(max_size=12),
    st.binary(max_size=12),
)


class BloomMachine(RuleBasedStateMachine):
    """Every key of the model set is always reported present."""

    def __init__(self) -> None:
        super().__init__()
        self.cls = random.choice(CLASSES)
        self.f = self.cls(64, 0.05, seed=5)
        self.model: set[object] = set()
        self.snapshots: list[tuple[BloomFilter, set[object]]] = []

    @rule(k=keys_st)
    def add(self, k: object) -> None:
        was_new = self.f.add(k)
        if k in self.model:
            assert not was_new  # a key already added is never "new"
        self.model.add(k)

    @rule(ks=st.lists(keys_st, max_size=20))
    def add_many(self, ks: list[object]) -> None:
        self.f.add_many(ks)
        self.model.update(ks)

    @rule(k=keys_st)
    def contains(self, k: object) -> None:
        if k in self.model:
            assert k in self.f

    @rule()
    def copy_and_snapshot(self) -> None:
        self.snapshots.append((self.f.copy(), set(self.model)))

    @precondition(lambda self: self.snapshots)
    @rule()
    def merge_snapshot(self) -> None:
        other, keys = self.snapshots.pop()
        self.f |= other
        self.model |= keys

    @rule()
    def round_trip_bytes(self) -> None:
        self.f = bloomkit.loads(self.f.to_bytes())

    @rule()
    def round_trip_pickle(self) -> None:
        self.f = pickle.loads(pickle.dumps(self.f))

    @rule()
    def clear(self) -> None:
        self.f.clear()
        self.model.clear()

    @invariant()
    def no_false_negatives(self) -> None:
        assert all(self.f.contains_many(list(self.model)))


TestBloomMachine = BloomMachine.TestCase
TestBloomMachine.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)


class ThreadConcurrencyTests:
    """GIL-free numpy batches, GIL-held list batches and per-item adds from
    several threads at once lose no bit: the result equals a sequential
    build of the same keys (OR is order-independent)."""

    def test_mixed_writers_equal_a_sequential_build(self, cls: type[BloomFilter]) -> None:
        import threading

        n = 400_000
        arr = np.arange(n, dtype=np.int64) * 2654435761 % 2**61
        per_item = [f"item-{i}" for i in range(40_000)]
        via_key = list(range(30_000))
        shared = cls(n + 100_000, 0.01)

        def numpy_batches(part: int) -> None:
            for chunk in np.array_split(arr[part::2], 40):
                shared.add_many(chunk)

        def items() -> None:
            for k in per_item:
                shared.add(k)

        def str_lists() -> None:  # GIL-held batches between the GIL-free ones
            for i in range(0, len(via_key), 1000):
                shared.update([str(k) for k in via_key[i : i + 1000]])

        threads = [threading.Thread(target=numpy_batches, args=(p,)) for p in (0, 1)]
        threads += [threading.Thread(target=items), threading.Thread(target=str_lists)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        ref = cls(n + 100_000, 0.01)
        ref.add_many(arr)
        ref.add_many(per_item)
        ref.add_many([str(k) for k in via_key])
        assert shared == ref


# ---- the generic tests' recipes (tests/kind_list.py) ------------------------------------

RECIPES = [
    kind_list.Recipe(
        "BloomFilter",
        hot=("add", "k"),
        merge=lambda a, b: a | b,
        threads=[kind_list.ThreadSpec(
            "bloom", lambda key: BloomFilter(40_000, 0.01, key=key), unite=kind_list.ior)],
        rewrites={"": "bloomkit.BloomFilter(300, 0.01, seed=1)"},
        numpy=kind_list.numpy_filter(lambda: BloomFilter(3000, 0.01, seed=3)),
        arrow=kind_list.arrow_filter(lambda: BloomFilter(3000, 0.01, seed=3)),
        golden={
            "BloomFilter_small": {
                "class": "BloomFilter", "args": [1000, 0.01], "kwargs": {},
                "keys": {"recipe": "int_range", "start": 0, "stop": 1000}},
            "BloomFilter_seeded_str": {
                "class": "BloomFilter", "args": [400, 0.001], "kwargs": {"seed": 2**63 + 5},
                "keys": {"recipe": "str_format", "format": "key-{}", "start": 0, "stop": 400}},
            "BloomFilter_keyed": {
                "class": "BloomFilter", "constructor": "with_size", "args": [4096, 5],
                "kwargs": {"secret": kind_list.GOLDEN_SECRET},
                "keys": {"recipe": "bytes_format", "format": "b{}", "start": 0, "stop": 300}},
        }),
    kind_list.Recipe(
        "BlockedBloomFilter",
        hot=("add", "k"),
        merge=lambda a, b: a | b,
        threads=[kind_list.ThreadSpec(
            "blocked", lambda key: BlockedBloomFilter(40_000, 0.01, key=key),
            unite=kind_list.ior)],
        rewrites={"": "bloomkit.BlockedBloomFilter(300, 0.01, seed=1)"},
        numpy=kind_list.numpy_filter(lambda: BlockedBloomFilter(3000, 0.01, seed=3)),
        arrow=kind_list.arrow_filter(lambda: BlockedBloomFilter(3000, 0.01, seed=3)),
        golden={
            "BlockedBloomFilter_small": {
                "class": "BlockedBloomFilter", "args": [1000, 0.01], "kwargs": {},
                "keys": {"recipe": "int_range", "start": -500, "stop": 500}},
            "BlockedBloomFilter_seeded_str": {
                "class": "BlockedBloomFilter", "args": [500, 0.0001], "kwargs": {"seed": 42},
                "keys": {"recipe": "str_format", "format": "ключ-{}", "start": 0, "stop": 500}},
            # Blocked layout version 1 (in-block positions from a splitmix64 stream of
            # the key hash, exact-model sizing): the recipes of the two above, whose
            # files are version 0 (a recipe without layout_version builds version 0).
            "BlockedBloomFilter_v1_small": {
                "class": "BlockedBloomFilter", "args": [1000, 0.01],
                "kwargs": {"layout_version": 1},
                "keys": {"recipe": "int_range", "start": -500, "stop": 500}},
            "BlockedBloomFilter_v1_seeded_str": {
                "class": "BlockedBloomFilter", "args": [500, 0.0001],
                "kwargs": {"seed": 42, "layout_version": 1},
                "keys": {"recipe": "str_format", "format": "ключ-{}", "start": 0, "stop": 500}},
        }),
]
