"""R34: one key rule on every path, numpy scalars and arrays included (docs/keys.md).

A numpy integer or bool scalar is the int of its value, exactly like the
element of the array it came from; numpy floating, complex, datetime and void
scalars are refused like a Python float; an array passed to ``add``/``in`` is
one key only when it is 1-d bytes.  Per-item, list, iterator and buffer
batches set identical bits in every structure, locally, in Redis and through
bloomkit.dask.
"""

from __future__ import annotations

import array
import ctypes
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bloomkit
import kind_list
from bloomkit import (
    BlockedBloomFilter,
    BloomFilter,
    CountingBloomFilter,
    CountMinSketch,
    _core,
)
from key_domains import without_key_domains

np = pytest.importorskip("numpy")
hnp = pytest.importorskip("hypothesis.extra.numpy")

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
#: every dtype the buffer batch takes (docs/keys.md, Batches)
BATCH_DTYPES = [*INT_DTYPES, "bool", "S1", "S3", "S8", "S17"]
REFUSED_SCALARS = [
    np.float16(1), np.float32(1), np.float64(1), np.longdouble(1),
    np.complex64(1), np.complex128(1), np.clongdouble(1),
    np.datetime64("2020-01-01"), np.datetime64(5, "ns"), np.timedelta64(5, "s"),
    np.void(b"ab"),
]


# ---- the structures, behind one small interface ------------------------------------------


Kind = kind_list.NumpyCase  # the structure behind one small interface (each kind's recipe)
_CASES, _EXEMPT = kind_list.cases("numpy")
KINDS: list[Kind] = [_CASES[name] for name in sorted(_CASES)]


def test_the_recipes_cover_every_kind() -> None:
    """A new kind needs a numpy case in its recipe (or an exemption with its reason)."""
    kind_list.assert_covers(_CASES, _EXEMPT)


def _dedupe(arr: Any) -> Any:
    """The first occurrence of every distinct key, in order (numpy's own equality)."""
    seen: set[Any] = set()
    keep = []
    for i, x in enumerate(arr.tolist()):
        if x not in seen:
            seen.add(x)
            keep.append(i)
    return arr[np.array(keep, dtype=np.intp)]


# ---- strategies --------------------------------------------------------------------------


@st.composite
def batch_arrays(draw: st.DrawFn, dtype: str) -> Any:
    """A 1-d array of ``dtype``: maybe strided or reversed, and for bool maybe
    a view of uint8 bytes 0..255 (every non-zero byte is True)."""
    n = draw(st.integers(0, 48))
    if dtype == "bool" and draw(st.booleans()):
        raw = draw(hnp.arrays(np.uint8, n))
        arr = raw.view(np.bool_)
    else:
        arr = draw(hnp.arrays(np.dtype(dtype), n))
    step = draw(st.sampled_from([1, 1, 2, -1, -3]))
    return arr[::step]


python_keys = st.lists(
    st.one_of(
        st.integers(min_value=-(2**80), max_value=2**80),
        st.booleans(),
        st.binary(max_size=20),
        st.text(max_size=12),
    ),
    max_size=40,
)

PROPERTY = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
#: per (dtype, structure) pair: 13 dtypes x 9 structures
PER_DTYPE = settings(PROPERTY, max_examples=15)


# ---- the property: every path, every dtype, every structure ------------------------------


@pytest.mark.parametrize("kind", KINDS, ids=repr)
class OneRuleEveryPathTests:
    @pytest.mark.parametrize("dtype", BATCH_DTYPES)
    def test_array_paths_set_identical_bits(self, kind: Kind, dtype: str) -> None:
        # the dtype is a parameter, not drawn: hypothesis would favour a few
        @PER_DTYPE
        @given(arr=batch_arrays(dtype))
        def check(arr: Any) -> None:
            self._check_array_paths(kind, arr)

        check()

    @staticmethod
    def _check_array_paths(kind: Kind, arr: Any) -> None:
        if kind.distinct:
            arr = _dedupe(arr)
        paths: dict[str, Callable[[Any], None]] = {
            "per-item numpy scalars": lambda o: [kind.add_one(o, x) for x in arr],
            "per-item python objects": lambda o: [kind.add_one(o, x) for x in arr.tolist()],
            "buffer batch": lambda o: kind.add_many(o, arr),
            "list of numpy scalars": lambda o: kind.add_many(o, list(arr)),
            "list of python objects": lambda o: kind.add_many(o, arr.tolist()),
            "iterator of numpy scalars": lambda o: kind.add_many(o, iter(arr)),
        }
        states = {}
        for path, run in paths.items():
            obj = kind.make()
            run(obj)
            states[path] = kind.state(obj)
            # no false negatives: each element, as numpy gives it and as Python does
            assert all(kind.has(obj, x) for x in arr), (path, arr.dtype)
            assert all(kind.has(obj, x) for x in arr.tolist()), (path, arr.dtype)
        assert len(set(states.values())) == 1, {p: hash(s) for p, s in states.items()}

    @PROPERTY
    @given(keys=python_keys)
    def test_python_paths_set_identical_bits(self, kind: Kind, keys: list[Any]) -> None:
        if kind.distinct:
            # True == 1 and "a" is b"a" for bloomkit: dedupe by encoded key
            # (by position: the same small int object may stand in the list 9 times)
            seen: set[int] = set()
            firsts = []
            for k in keys:
                h = _core.key_hash(k)
                if h not in seen:
                    seen.add(h)
                    firsts.append(k)
            keys = firsts
        states = set()
        for run in (lambda o: [kind.add_one(o, k) for k in keys],
                    lambda o: kind.add_many(o, keys),
                    lambda o: kind.add_many(o, iter(keys))):
            obj = kind.make()
            run(obj)
            states.add(kind.state(obj))
            assert all(kind.has(obj, k) for k in keys)
        assert len(states) == 1

    def test_bool_array_members(self, kind: Kind) -> None:
        """The issue's reproduction: [x in f for x in arr] was [False, False]."""
        arr = np.array([True, False])
        obj = kind.make()
        kind.add_many(obj, arr)
        assert [kind.has(obj, x) for x in arr] == [True, True]
        assert kind.has(obj, 1) and kind.has(obj, 0) and kind.has(obj, True)

    def test_refused_scalars_on_every_path(self, kind: Kind) -> None:
        obj = kind.make()
        paths: list[Callable[[Any], Any]] = [
            lambda x: kind.add_one(obj, x),
            lambda x: kind.has(obj, x),
            lambda x: kind.add_many(obj, [x]),
            lambda x: kind.add_many(obj, iter([x])),
        ]
        for x in REFUSED_SCALARS:
            for run in paths:
                with pytest.raises(TypeError, match=r"str, bytes-like .* or int"):
                    run(x)
        assert kind.state(obj) == kind.state(kind.make())  # nothing was added


class ScalarRuleTests:
    @pytest.mark.parametrize("dtype", [*INT_DTYPES, "bool"])
    def test_integer_and_bool_scalars_are_ints_by_value(self, dtype: str) -> None:
        info = np.iinfo(dtype) if dtype != "bool" else None
        values = [0, 1] if info is None else sorted({0, 1, info.max, info.min, info.max // 3})
        for v in values:
            x = np.dtype(dtype).type(v)
            assert _core.key_hash(x) == _core.key_hash(int(v)), (dtype, v)
            for seed, secret in [(7, None), (0, bytes(range(16)))]:
                assert _core.key_hash(x, seed, secret) == _core.key_hash(int(v), seed, secret)

    def test_bool_scalar_is_not_a_byte(self) -> None:
        assert _core.key_hash(np.True_) == _core.key_hash(1) != _core.key_hash(b"\x01")
        assert _core.key_hash(np.False_) == _core.key_hash(0) != _core.key_hash(b"\x00")

    def test_str_and_bytes_scalars_are_str_and_bytes(self) -> None:
        assert _core.key_hash(np.str_("héllo")) == _core.key_hash("héllo")
        assert _core.key_hash(np.bytes_(b"ab")) == _core.key_hash(b"ab")
        assert _core.key_hash(np.array([b"ab\x00"], dtype="S4")[0]) == _core.key_hash(b"ab")

    @pytest.mark.parametrize("x", REFUSED_SCALARS, ids=lambda x: type(x).__name__)
    def test_refused_like_a_python_float(self, x: Any) -> None:
        with pytest.raises(TypeError) as as_float:
            _core.key_hash(1.5)
        with pytest.raises(TypeError) as got:
            _core.key_hash(x)
        name = f"{type(x).__module__}.{type(x).__name__}"
        assert str(got.value) == str(as_float.value).replace("not float", f"not {name}")

    def test_integer_likes_without_numpy_stay_ints(self) -> None:
        class IntKey:
            def __index__(self) -> int:
                return 2**70

        assert _core.key_hash(IntKey()) == _core.key_hash(2**70)


class BufferKeyTests:
    """``add(arr)`` / ``arr in f``: one key only for 1-d bytes."""

    @pytest.mark.parametrize("make", [
        lambda: np.frombuffer(b"a\x00bc", dtype=np.uint8),
        lambda: np.frombuffer(b"a\x00bc", dtype=np.int8),
        lambda: np.frombuffer(b"a\x00bc", dtype="S1"),
        lambda: (ctypes.c_char * 4).from_buffer_copy(b"a\x00bc"),
        lambda: array.array("B", b"a\x00bc"),
        lambda: array.array("b", b"a\x00bc"),
        lambda: memoryview(b"a\x00bc"),
        lambda: bytearray(b"a\x00bc"),
    ], ids=["uint8", "int8", "S1", "ctypes-char", "array-B", "array-b", "memoryview", "bytearray"])
    def test_one_byte_buffers_are_their_raw_bytes(self, make: Callable[[], Any]) -> None:
        key = make()
        assert _core.key_hash(key) == _core.key_hash(b"a\x00bc")
        f = BloomFilter(100, 0.01)
        f.add(key)
        assert b"a\x00bc" in f and "a\x00bc" in f

    @pytest.mark.parametrize("make", [
        lambda: np.array([10, 20, 30]),
        lambda: np.array([7], dtype=np.int64),
        lambda: np.array([1, 2], dtype=np.uint16),
        lambda: np.array([True, False]),
        lambda: np.array([b"ab", b"cd"], dtype="S2"),
        lambda: np.array(5),
        lambda: np.array(5, dtype=np.uint8),
        lambda: np.zeros((2, 2), dtype=np.uint8),
        lambda: np.array([1.0, 2.0]),
        lambda: np.array(["a"], dtype=object),
        lambda: np.array(["ab"]),
        lambda: memoryview(b"abcd").cast("I"),
        lambda: memoryview(b"abcd").cast("B", (2, 2)),
        lambda: array.array("q", [1, 2]),
        lambda: np.array(["2020-01-01"], dtype="M8[D]"),
    ], ids=["int64x3", "int64x1", "uint16", "bool", "S2", "0-d int", "0-d uint8", "2-d uint8",
            "float", "object", "unicode", "memoryview-I", "memoryview-2d", "array-q", "datetime"])
    def test_other_buffers_are_refused(self, make: Callable[[], Any]) -> None:
        key = make()
        for kind in KINDS:
            obj = kind.make()
            with pytest.raises(TypeError, match=r"add_many|str, bytes-like"):
                kind.add_one(obj, key)
            with pytest.raises(TypeError, match=r"add_many|str, bytes-like"):
                kind.has(obj, key)
            assert kind.state(obj) == kind.state(kind.make()), kind

    def test_int_array_error_points_to_add_many(self) -> None:
        f = BloomFilter(100, 0.01)
        with pytest.raises(TypeError, match=r"1-d numpy.ndarray .*add_many\(\)"):
            f.add(np.array([10, 20, 30]))
        f.add_many(np.array([10, 20, 30]))
        assert all(x in f for x in np.array([10, 20, 30]))

    def test_strided_bytes_are_refused(self) -> None:
        with pytest.raises(TypeError, match="C-contiguous"):
            _core.key_hash(memoryview(b"abcdef")[::2])
        assert _core.key_hash(memoryview(b"abcdef")[::3][:1]) == _core.key_hash(b"a")


class BatchEdgeTests:
    def test_bool_bytes_above_one_are_true(self) -> None:
        raw = np.array([0, 1, 2, 255], dtype=np.uint8)
        arr = raw.view(np.bool_)
        a, b = BloomFilter(100, 0.01), BloomFilter(100, 0.01)
        a.add_many(arr)
        b.add_many([0, 1])
        assert a == b
        assert a.contains_many(arr).all()

    def test_key_function_sees_numpy_scalars(self) -> None:
        f = BloomFilter(100, 0.01, key=lambda x: x)
        f.add_many(np.array([True, False]))  # key=: iterated, each element through key
        assert np.True_ in f and 1 in f and 0 in f


# ---- Redis ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def redis_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from redis_fixtures import RedisServer, require_redis

    require_redis()
    s = RedisServer(tmp_path_factory.mktemp("redis-numpy")).start()
    yield s.client()
    s.stop()


class RedisRuleTests:
    def test_redis_structures_follow_the_rule(self, redis_client: Any, rng: random.Random) -> None:
        from bloomkit.redis import RedisBloomFilter, RedisCountingBloomFilter, RedisCountMinSketch

        arrays = [np.array([rng.randint(int(np.iinfo(dt).min), int(np.iinfo(dt).max))
                            for _ in range(40)], dtype=dt)
                  for dt in ("int8", "int32", "int64", "uint16")]
        arrays += [np.array([True, False, True]), np.array([2**64 - 1, 2**63, 5], dtype=np.uint64),
                   np.array([b"ab\x00", b"", b"xyz"], dtype="S4")]
        for i, arr in enumerate(arrays):
            for layout, local_cls in (("classic", BloomFilter), ("blocked", BlockedBloomFilter)):
                name = f"npk:{layout}:{i}"
                RedisBloomFilter.delete_named(redis_client, name)
                r = RedisBloomFilter.create(redis_client, name, 500, 0.01, layout=layout, seed=4)
                local = local_cls(500, 0.01, seed=4)
                r.add_many(arr)
                local.add_many(arr)
                assert r.to_local().to_bytes() == without_key_domains(local), (layout, arr.dtype)
                assert [x in r for x in arr] == [True] * len(arr)
                assert all(r.contains_many(list(arr)))
                # per-item numpy scalars set the same bits
                RedisBloomFilter.delete_named(redis_client, name)
                r = RedisBloomFilter.create(redis_client, name, 500, 0.01, layout=layout, seed=4)
                for x in arr:
                    r.add(x)
                assert r.to_local().to_bytes() == without_key_domains(local), (layout, arr.dtype)
        arr = np.array([True, False, True, True])
        c = RedisCountingBloomFilter.create(redis_client, "npk:counting", 100, 0.01)
        lc = CountingBloomFilter(100, 0.01, layout="classic")  # as Redis keeps it
        c.add_many(arr)
        lc.add_many(arr)
        assert c.to_local().to_bytes() == without_key_domains(lc)
        assert c.count_many(list(arr)) == [3, 1, 3, 3] == [lc.count(x) for x in arr]
        m = RedisCountMinSketch.create(redis_client, "npk:cms", 64, 3)
        lm = CountMinSketch(64, 3)
        m.add_many(arr)
        lm.add_many(arr)
        for x in np.array([7, 8], dtype=np.uint8):
            m.add(x)
            lm.add(x)
        assert m.to_local().to_bytes() == without_key_domains(lm)
        assert m.estimate_many(list(arr)) == [3, 1, 3, 3]
        r = RedisBloomFilter.create(redis_client, "npk:refuse", 100, 0.01)
        for bad in (np.float64(1.0), np.datetime64("2020-01-01"), np.array([10, 20, 30])):
            with pytest.raises(TypeError):
                r.add(bad)
            with pytest.raises(TypeError):
                _ = bad in r


# ---- Dask ----------------------------------------------------------------------------------


@pytest.fixture
def sync_dask() -> Iterator[None]:
    dask = pytest.importorskip("dask")
    pytest.importorskip("dask.dataframe")
    pytest.importorskip("pandas")
    # convert-string off: dask would otherwise turn an object column of
    # numpy bools into the strings "True"/"False" before bloomkit sees it
    with dask.config.set({"scheduler": "sync", "dataframe.convert-string": False}):
        yield


class DaskRuleTests:
    def test_dask_paths_follow_the_rule(self, sync_dask: None, rng: random.Random) -> None:
        import dask.array as da
        import dask.bag as db
        import dask.dataframe as dd
        import pandas as pd

        import bloomkit.dask as bkd

        bools = np.array([rng.random() < 0.5 for _ in range(300)])
        ints = np.array([rng.randrange(2**64) for _ in range(300)], dtype=np.uint64)
        for arr in (bools, ints):
            ref = BloomFilter(1000, 0.01, seed=2)
            ref.add_many(arr)
            ref._recount()
            sources = {
                "array": da.from_array(arr, chunks=37),
                "bag of numpy scalars": db.from_sequence(list(arr), npartitions=5),
                "bag of python objects": db.from_sequence(arr.tolist(), npartitions=4),
                "series": dd.from_pandas(pd.Series(arr), npartitions=3),
                "object series": dd.from_pandas(pd.Series(list(arr), dtype=object),
                                                npartitions=3),
            }
            for label, coll in sources.items():
                f = bkd.build(coll, BloomFilter, 1000, 0.01, seed=2)
                assert f.to_bytes() == ref.to_bytes(), (label, arr.dtype)
                assert all(x in f for x in arr), label
                kept = bkd.filter_membership(coll, ref).compute()
                assert len(kept) == len(arr), label
        floats = da.from_array(np.array([1.0, 2.0]), chunks=1)
        with pytest.raises(TypeError, match=r"str, bytes-like .* or int"):
            bkd.build(floats, BloomFilter, 100, 0.01)
        assert bloomkit.key_hash(bools[0]) == bloomkit.key_hash(bool(bools[0]))
