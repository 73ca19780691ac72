"""Arrow arrays as batches (src/bloomkit/_native/py_arrow.c, docs/engines.md).

Every key type through pyarrow, Polars, DuckDB and hand-made C Data Interface
capsules gives the same answers and the same filter bytes as the same keys as
Python objects, in every structure with a batch path; chunked arrays and
sliced arrays (offsets) included; null rows are no key (skipped on add, False
or 0 in results); a hostile capsule raises a clear error, never a crash.
"""

from __future__ import annotations

import ctypes
import random
from typing import Any

import pytest

import kind_list
from bloomkit import (
    BinaryFuseFilter,
    BlockedBloomFilter,
    BloomFilter,
    CountMinSketch,
)

np = pytest.importorskip("numpy")
pa = pytest.importorskip("pyarrow")


Kind = kind_list.ArrowCase  # a batch add and a batch query (each kind's recipe)
_CASES, _EXEMPT = kind_list.cases("arrow")
KINDS: list[Kind] = [_CASES[name] for name in sorted(_CASES)]


def test_the_recipes_cover_every_kind() -> None:
    """A new kind needs an Arrow case in its recipe (or an exemption with its reason)."""
    kind_list.assert_covers(_CASES, _EXEMPT)


INT_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
BYTE_TYPES = ["string", "large_string", "binary", "large_binary", "string_view",
              "binary_view"]


def _ints(rng: random.Random, t: str, n: int) -> list[int]:
    info = np.iinfo(t)
    edges = [int(info.min), int(info.max), 0, 1]
    if info.min < 0:
        edges.append(-1)
    return edges + [rng.randint(int(info.min), int(info.max)) for _ in range(n)]


def _strs(rng: random.Random, n: int) -> list[str]:
    # lengths around the view type's 12-byte inline limit and the hash's 16/64
    return ["", "é", "abc"] + ["".join(rng.choice("abcxyzé€") for _ in range(rng.choice(
        [0, 1, 5, 12, 13, 16, 17, 40, 70]))) for _ in range(n)]


def _keys_of(t: str, rng: random.Random, n: int = 60) -> tuple[list[Any], Any]:
    """Python keys and the Arrow array of them (type t)."""
    if t in INT_TYPES:
        keys: list[Any] = _ints(rng, t, n)
        return keys, pa.array(keys, type=getattr(pa, t)())
    strs = _strs(rng, n)
    if "binary" in t:
        keys = [s.encode() for s in strs]
    else:
        keys = strs
    return keys, pa.array(keys, type=getattr(pa, t)())


def _unique(keys: list[Any]) -> list[Any]:
    return list(dict.fromkeys(keys))


def _state(obj: Any) -> bytes:
    return bytes(obj.to_bytes())


# ---- every key type, every structure ---------------------------------------------------


@pytest.mark.parametrize("kind", KINDS, ids=repr)
@pytest.mark.parametrize("t", INT_TYPES + BYTE_TYPES + ["bool", "fixed", "dictionary"])
def test_arrow_keys_equal_python_keys(kind: Kind, t: str, rng: random.Random) -> None:
    if t == "bool":
        keys: list[Any] = [True, False, True]
        arr = pa.array(keys)
    elif t == "fixed":
        keys = [bytes(rng.randrange(256) for _ in range(5)) for _ in range(40)]
        arr = pa.array(keys, type=pa.binary(5))
    elif t == "dictionary":
        keys = [rng.choice(["a", "bb", "ccc", "a much longer key than twelve"])
                for _ in range(50)]
        arr = pa.array(keys).dictionary_encode()
    else:
        keys, arr = _keys_of(t, rng)
    if kind.distinct:
        keys = _unique(keys)
        arr = pa.array(keys, type=arr.type) if t != "dictionary" else \
            pa.array(keys).dictionary_encode()
    a, b = kind.make(), kind.make()
    kind.add_many(a, keys)
    kind.add_many(b, arr)
    assert kind.state(a) == kind.state(b)
    probes = keys + (["nope", b"nope", 10**30] if t not in INT_TYPES else [12345])
    if t in INT_TYPES:
        probe_arr: Any = pa.array(probes, type=pa.int64() if "u" not in t else pa.uint64())
        probes = probe_arr.to_pylist()
    else:
        probe_arr = arr
        probes = keys
    assert list(kind.query(a, probes)) == list(kind.query(a, probe_arr))


def test_arrow_ints_match_numpy_of_every_width(rng: random.Random) -> None:
    for t in INT_TYPES:
        keys = _ints(rng, t, 200)
        a, b, c = BloomFilter(1000, 0.01, seed=9), BloomFilter(1000, 0.01, seed=9), \
            BloomFilter(1000, 0.01, seed=9)
        a.add_many(keys)
        b.add_many(np.array(keys, dtype=t))
        c.add_many(pa.array(keys, type=getattr(pa, t)()))
        assert _state(a) == _state(b) == _state(c), t


def test_binary_fuse_builds_from_arrow(rng: random.Random) -> None:
    keys = _unique(_strs(rng, 300))
    a = BinaryFuseFilter(keys, seed=4)
    b = BinaryFuseFilter(pa.array(keys), seed=4)
    assert _state(a) == _state(b)
    ints = _unique(_ints(rng, "int64", 300))
    assert _state(BinaryFuseFilter(ints, seed=4)) == \
        _state(BinaryFuseFilter(pa.chunked_array([ints[:100], ints[100:]]), seed=4))


# ---- chunked arrays, slices, tables -----------------------------------------------------


@pytest.mark.parametrize("t", ["int32", "uint64", "string", "large_binary", "string_view"])
def test_chunked_and_sliced(t: str, rng: random.Random) -> None:
    keys, arr = _keys_of(t, rng, 200)
    ref = BloomFilter(1000, 0.01, seed=2)
    ref.add_many(keys[17:150])
    sliced = BloomFilter(1000, 0.01, seed=2)
    sliced.add_many(arr.slice(17, 133))
    chunked = BloomFilter(1000, 0.01, seed=2)
    chunked.add_many(pa.chunked_array([arr.slice(17, 50), arr.slice(67, 0),
                                       arr.slice(67, 83)]))
    table = BloomFilter(1000, 0.01, seed=2)
    table.add_many(pa.table({"k": arr}).slice(17, 133))  # a one-column table: its column
    assert _state(ref) == _state(sliced) == _state(chunked) == _state(table)
    got = ref.contains_many(pa.chunked_array([arr.slice(0, 17), arr.slice(17)]))
    assert isinstance(got, np.ndarray) and got.dtype == np.bool_
    assert got.tolist() == ref.contains_many(keys)


def test_table_of_two_columns_is_refused() -> None:
    with pytest.raises(TypeError, match="one column"):
        BloomFilter(100, 0.01).contains_many(pa.table({"a": [1], "b": [2]}))


@pytest.mark.parametrize("arr", [pa.array([1.5]), pa.array([1], pa.date32()),
                                 pa.array([[1]])], ids=["float", "date", "list"])
def test_non_key_types_are_refused(arr: Any) -> None:
    with pytest.raises(TypeError, match="not keys"):
        BloomFilter(100, 0.01).add_many(arr)


# ---- nulls ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS, ids=repr)
def test_nulls_are_no_key(kind: Kind, rng: random.Random) -> None:
    keys = _unique([rng.randrange(-10**12, 10**12) for _ in range(3000)])
    with_nulls = [None if rng.random() < 0.3 else k for k in keys]
    # a null at the very end and a long run of them (whole chunks)
    with_nulls[-1] = None
    with_nulls[1100:2200] = [None] * 1100
    present = [k for k in with_nulls if k is not None]
    a, b = kind.make(), kind.make()
    kind.add_many(a, present)
    kind.add_many(b, pa.array(with_nulls, type=pa.int64()))
    assert kind.state(a) == kind.state(b)
    got = list(kind.query(a, pa.array(with_nulls, type=pa.int64())))
    want = kind.query(a, present)
    it = iter(want)
    expect = [type(want[0])(0) if k is None else next(it) for k in with_nulls]
    assert got == expect


def test_null_rows_answer_false_and_zero() -> None:
    f = BlockedBloomFilter(100_000, 0.01, seed=1)
    f.add_many(range(100_000))  # blocked filter: its large-batch stage is bypassed
    arr = pa.array([None if i % 7 == 0 else i for i in range(100_000)], type=pa.int64())
    got = f.contains_many(arr)
    assert got.tolist() == [i % 7 != 0 for i in range(100_000)]
    assert f.contains_many(pa.nulls(5)).tolist() == [False] * 5
    g = BlockedBloomFilter(100_000, 0.01, seed=1)
    g.add_many(arr)
    h = BlockedBloomFilter(100_000, 0.01, seed=1)
    h.add_many([i for i in range(100_000) if i % 7])
    assert _state(g) == _state(h)
    s = CountMinSketch(512, 4, seed=1)
    s.add_many(pa.array(["a", None, "b"]), counts=[5, 100, 7])  # a null's count is dropped
    assert s.estimate_many(pa.array(["a", None, "b"])).tolist() == [5, 0, 7]
    assert s.total == 12


def test_strings_with_nulls_and_dictionary_nulls() -> None:
    f = BloomFilter(1000, 0.01, seed=5)
    f.add_many(pa.array(["x", None, "y"]))
    g = BloomFilter(1000, 0.01, seed=5)
    g.add_many(["x", "y"])
    assert _state(f) == _state(g)
    d = pa.DictionaryArray.from_arrays(pa.array([0, None, 1, 2]), pa.array(["x", "y", None]))
    assert f.contains_many(d).tolist() == [True, False, True, False]


# ---- Polars and DuckDB ------------------------------------------------------------------


def test_polars_series(rng: random.Random) -> None:
    pl = pytest.importorskip("polars")
    for t in ["Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64"]:
        dtype = getattr(pl, t)
        keys = _ints(rng, t.lower(), 100)
        a, b = BloomFilter(1000, 0.01, seed=3), BloomFilter(1000, 0.01, seed=3)
        a.add_many(keys)
        b.add_many(pl.Series(keys, dtype=dtype))
        assert _state(a) == _state(b), t
    strs = _strs(rng, 200)
    a, b = BloomFilter(1000, 0.01, seed=3), BloomFilter(1000, 0.01, seed=3)
    a.add_many(strs)
    b.add_many(pl.Series(strs))
    assert _state(a) == _state(b)
    s = pl.Series([*strs[:5], None]).cast(pl.Categorical)
    assert a.contains_many(s).tolist() == [True] * 5 + [False]
    chunked = pl.concat([pl.Series(strs[:50]), pl.Series(strs[50:])], rechunk=False)
    assert a.contains_many(chunked).tolist() == [True] * len(strs)


def test_duckdb_relation_is_a_stream() -> None:
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    f = BloomFilter(10_000, 0.001, seed=8)
    f.add_many(range(0, 10_000, 3))
    rel = con.sql("SELECT range AS uid FROM range(10000)")
    assert f.contains_many(rel).tolist() == f.contains_many(list(range(10_000)))


# ---- hostile capsules -------------------------------------------------------------------


class _Schema(ctypes.Structure):
    pass


class _Array(ctypes.Structure):
    pass


_SRELEASE = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Schema))
_ARELEASE = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Array))
_Schema._fields_ = [
    ("format", ctypes.c_char_p), ("name", ctypes.c_char_p), ("metadata", ctypes.c_char_p),
    ("flags", ctypes.c_int64), ("n_children", ctypes.c_int64),
    ("children", ctypes.POINTER(ctypes.POINTER(_Schema))),
    ("dictionary", ctypes.POINTER(_Schema)), ("release", _SRELEASE),
    ("private_data", ctypes.c_void_p)]
_Array._fields_ = [
    ("length", ctypes.c_int64), ("null_count", ctypes.c_int64), ("offset", ctypes.c_int64),
    ("n_buffers", ctypes.c_int64), ("n_children", ctypes.c_int64),
    ("buffers", ctypes.POINTER(ctypes.c_void_p)),
    ("children", ctypes.POINTER(ctypes.POINTER(_Array))),
    ("dictionary", ctypes.POINTER(_Array)), ("release", _ARELEASE),
    ("private_data", ctypes.c_void_p)]
_NOOP_S = _SRELEASE(lambda p: None)
_NOOP_A = _ARELEASE(lambda p: None)
_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class Handmade:
    """An object exporting a hand-built ArrowSchema/ArrowArray (no release work)."""

    def __init__(self, fmt: bytes, length: int, buffers: list[Any], *, null_count: int = 0,
                 offset: int = 0, n_buffers: int | None = None, released: bool = False,
                 dictionary: tuple[bytes, Handmade] | None = None) -> None:
        self.keep: list[Any] = [fmt]
        self.raw = [ctypes.create_string_buffer(b, len(b)) if isinstance(b, bytes) else None
                    for b in buffers]
        ptrs = (ctypes.c_void_p * max(1, len(buffers)))(
            *[ctypes.cast(r, ctypes.c_void_p) if r is not None else None for r in self.raw])
        self.schema = _Schema(format=fmt, release=_NOOP_S)
        self.array = _Array(length=length, null_count=null_count, offset=offset,
                            n_buffers=len(buffers) if n_buffers is None else n_buffers,
                            buffers=ptrs, release=_ARELEASE() if released else _NOOP_A)
        self.keep.append(ptrs)
        if dictionary is not None:
            self.schema.format = dictionary[0]
            self.schema.dictionary = ctypes.pointer(dictionary[1].schema)
            self.array.dictionary = ctypes.pointer(dictionary[1].array)
            self.keep.append(dictionary[1])

    def __arrow_c_array__(self, requested_schema: Any = None) -> tuple[Any, Any]:
        return (_capsule_new(ctypes.addressof(self.schema), b"arrow_schema", None),
                _capsule_new(ctypes.addressof(self.array), b"arrow_array", None))


def _i32(*xs: int) -> bytes:
    return np.array(xs, dtype=np.int32).tobytes()


def test_handmade_capsule_is_read_like_pyarrow() -> None:
    # the harness itself: a valid hand-made string array answers like the Python keys
    f = BloomFilter(100, 0.01, seed=1)
    f.add_many(["ab", "c"])
    ok = Handmade(b"u", 3, [None, _i32(0, 2, 3, 3), b"abc"])
    assert f.contains_many(ok).tolist() == [True, True, False]


HOSTILE = {
    "decreasing offsets": (Handmade(b"u", 2, [None, _i32(0, 3, 1), b"abc"]), "non-decreasing"),
    "negative offset": (Handmade(b"z", 1, [None, _i32(-4, 1), b"abc"]), "non-negative"),
    "negative length": (Handmade(b"l", -1, [None, b"\0" * 8]), "length"),
    "huge offset": (Handmade(b"l", 1, [None, b"\0" * 8], offset=2**62), "length"),
    "null_count above length": (Handmade(b"l", 1, [None, b"\0" * 8], null_count=5),
                                "null_count"),
    "nulls but no bitmap": (Handmade(b"l", 2, [None, b"\0" * 16], null_count=1), "validity"),
    "missing values buffer": (Handmade(b"l", 2, [None, None]), "values buffer"),
    "too few buffers": (Handmade(b"u", 1, [None, _i32(0, 1)]), "n_buffers"),
    "no data buffer": (Handmade(b"u", 1, [None, _i32(0, 5), None]), "data buffer"),
    "released": (Handmade(b"l", 1, [None, b"\0" * 8], released=True), "released"),
    "view past its buffer": (
        Handmade(b"vu", 1, [None, _i32(20, 0, 0, 10), b"x" * 25, np.array([25], np.int64)
                            .tobytes()]), "view"),
    "view buffer index": (
        Handmade(b"vu", 1, [None, _i32(20, 0, 3, 0), b"x" * 25, np.array([25], np.int64)
                            .tobytes()]), "view"),
    "dictionary index": (
        Handmade(b"i", 2, [None, _i32(0, 7)],
                 dictionary=(b"i", Handmade(b"u", 2, [None, _i32(0, 1, 2), b"ab"]))),
        "dictionary"),
    "bad fixed width": (Handmade(b"w:0", 1, [None, b"a"]), "width"),
}


@pytest.mark.parametrize("case", list(HOSTILE), ids=str)
def test_hostile_capsules_raise(case: str) -> None:
    obj, match = HOSTILE[case]
    for f in (BloomFilter(100, 0.01), CountMinSketch(64, 2)):
        before = _state(f)
        with pytest.raises(ValueError, match=match):
            f.add_many(obj)
        assert _state(f) == before  # validated before the first key: nothing added


def test_pyarrow_array_with_bad_offsets_raises() -> None:
    bad = pa.Array.from_buffers(pa.string(), 3, [None, pa.py_buffer(_i32(0, 2, 1, 3)),
                                                 pa.py_buffer(b"abc")])
    with pytest.raises(ValueError, match="offsets\\[2\\] = 1"):
        BloomFilter(100, 0.01).contains_many(bad)


def test_capsule_of_the_wrong_name_raises() -> None:
    class Wrong:
        def __arrow_c_array__(self, requested_schema: Any = None) -> tuple[Any, Any]:
            return ("not", "capsules")

    with pytest.raises(TypeError, match="arrow_schema"):
        BloomFilter(100, 0.01).add_many(Wrong())


def test_pandas_series_through_arrow_or_as_objects() -> None:
    pd = pytest.importorskip("pandas")
    f, g = BloomFilter(1000, 0.01, seed=6), BloomFilter(1000, 0.01, seed=6)
    f.add_many(pd.Series([1, 2, None], dtype="Int64"))  # a nullable column: nulls skipped
    g.add_many([1, 2])
    assert _state(f) == _state(g)
    # a column pyarrow cannot export (mixed objects, an int past 64 bits) is
    # read as the Python objects, as before Arrow input
    mixed = pd.Series([1, "a", b"b", 2**70], dtype=object)
    f.add_many(mixed)
    g.add_many([1, "a", b"b", 2**70])
    assert _state(f) == _state(g)
    assert f.contains_many(mixed) == [True] * 4


def test_a_failing_producer_is_raised_not_iterated() -> None:
    class Failing:
        """An exporter whose export fails with its own error (not a conversion)."""

        def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
            raise RuntimeError("the query failed")

        def __iter__(self) -> Any:
            raise AssertionError("must not be iterated")

    with pytest.raises(RuntimeError, match="the query failed"):
        BloomFilter(100, 0.01).add_many(Failing())
