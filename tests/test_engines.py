"""bloomkit.engines (docs/engines.md): a filter as a DuckDB function.

``duckdb_register``'s function answers every row as ``contains_many`` does
(nulls: NULL), on one and on two DuckDB threads, across many vectors and a
last partial one, for integer (BIGINT, UBIGINT), string and BLOB keys, on
the path that packs the answers in C and on the one that packs them in
Python; the per-thread result Tables it refills in place never show one
call's answers in another's rows.  ``_core.contains_bits``, the C packing,
writes exactly ``contains_many``'s answers for every kind that takes it, or
declines and writes nothing.
"""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest

import kind_list
from bloomkit import BlockedBloomFilter, SlidingBloomFilter, _core, engines

np = pytest.importorskip("numpy")
pa = pytest.importorskip("pyarrow")


def _rows(con: Any, sql: str) -> list[tuple[Any, Any]]:
    return [tuple(r) for r in con.execute(sql).fetchall()]


@pytest.mark.parametrize("threads", [1, 2])
def test_duckdb_seen_answers_every_row_as_contains_many(threads: int,
                                                        rng: random.Random) -> None:
    duckdb = pytest.importorskip("duckdb")
    n = 40 * 2048 + 77  # many vectors, on each thread, and a partial last one
    keys = [rng.randrange(-2**63, 2**63) for _ in range(n)]
    f = BlockedBloomFilter(n, 0.05, seed=rng.randrange(2**32))
    f.add_many([k for i, k in enumerate(keys) if i % 3 == 0])
    con = duckdb.connect()
    con.execute(f"SET threads TO {threads}")
    uid = pa.array([None if i % 11 == 5 else k for i, k in enumerate(keys)], type=pa.int64())
    con.register("src", pa.table({"i": pa.array(range(n), type=pa.int64()), "uid": uid}))
    con.execute("CREATE TABLE t AS SELECT i, uid FROM src")
    engines.duckdb_register(con, "seen", f)
    got = dict(_rows(con, "SELECT i, seen(uid) FROM t"))
    answers = f.contains_many(keys)
    want = {i: None if i % 11 == 5 else bool(answers[i]) for i in range(n)}
    assert got == want
    count = con.execute("SELECT count(*) FROM t WHERE seen(uid)").fetchall()[0][0]
    assert count == sum(1 for v in want.values() if v)


class _Declines(BlockedBloomFilter):
    """contains_many overridden in Python: contains_bits must not bypass it."""

    def contains_many(self, keys: Any) -> Any:
        return [not x for x in super().contains_many(keys)]


@pytest.mark.parametrize("kind", ["blocked", "python", "sliding"])
@pytest.mark.parametrize("key_type", ["UBIGINT", "BLOB"])
def test_duckdb_seen_of_other_key_types_and_both_packings(key_type: str, kind: str,
                                                          rng: random.Random) -> None:
    duckdb = pytest.importorskip("duckdb")
    n = 3 * 2048 + 13
    if key_type == "UBIGINT":
        keys: list[Any] = [rng.randrange(2**64) for _ in range(n)]
        arr = pa.array(keys, type=pa.uint64())
    else:
        keys = [rng.randbytes(rng.randrange(0, 40)) for _ in range(n)]
        arr = pa.array(keys, type=pa.binary())
    f: Any = {"blocked": lambda: BlockedBloomFilter(n, 0.05, seed=3),
              "python": lambda: _Declines(n, 0.05, seed=3),
              # an hour, each slice holding all the adds: nothing leaves the window
              "sliding": lambda: SlidingBloomFilter(32 * n, 0.05, window=3600, seed=3)}[kind]()
    f.add_many(keys[::2])
    # which packing duckdb_register takes: C for a C contains_many, else Python's
    assert _core.contains_bits(f, (), np.zeros(0, np.uint8)) is (kind != "python")
    con = duckdb.connect()
    con.register("src", pa.table({"i": pa.array(range(n)), "k": arr}))
    con.execute("CREATE TABLE t AS SELECT i, k FROM src")
    engines.duckdb_register(con, "seen", f, key_type=key_type)
    got = dict(_rows(con, "SELECT i, seen(k) FROM t"))
    assert got == {i: bool(x) for i, x in enumerate(f.contains_many(keys))}


def test_duckdb_seen_of_strings(rng: random.Random) -> None:
    duckdb = pytest.importorskip("duckdb")
    words = ["".join(rng.choice("abcé€xyz") for _ in range(rng.randrange(0, 30)))
             for _ in range(3 * 2048 + 5)]
    f = BlockedBloomFilter(len(words), 0.05, seed=5)
    f.add_many(words[::2])
    con = duckdb.connect()
    con.register("src", pa.table({"i": pa.array(range(len(words))), "w": pa.array(words)}))
    con.execute("CREATE TABLE t AS SELECT i, w FROM src")
    engines.duckdb_register(con, "seen", f, key_type="VARCHAR")
    got = dict(_rows(con, "SELECT i, seen(w) FROM t"))
    assert got == {i: bool(x) for i, x in enumerate(f.contains_many(words))}


def test_result_tables_are_refilled_per_thread_and_length() -> None:
    tables = engines._BoolTables(pa, np)
    a = np.array([True, False, True] * 700)  # 2,100 rows
    t1 = tables.fill(a)
    assert t1.column(0).to_pylist() == a.tolist()
    b = ~a
    t2 = tables.fill(b)
    assert t2 is t1  # the same Table, refilled
    assert t2.column(0).to_pylist() == b.tolist()
    short = tables.fill(np.array([True] * 9))  # another length: its own Table
    assert short.num_rows == 9 and short.column(0).to_pylist() == [True] * 9
    assert t1.column(0).to_pylist() == b.tolist()
    other: list[Any] = []
    th = threading.Thread(target=lambda: other.append(tables.fill(a)))
    th.start()
    th.join()
    assert other[0] is not t1 and other[0].column(0).to_pylist() == a.tolist()
    assert t1.column(0).to_pylist() == b.tolist()  # another thread wrote its own


# ---- _core.contains_bits: contains_many's answers, bit-packed ----------------------------

# the kinds with contains_many (the sketches and TopK answer through their own methods)
_CASES = {name: case for name, case in kind_list.cases("arrow")[0].items()
          if hasattr(case.make(), "contains_many")}


def _packed(answers: Any, n: int) -> list[int]:
    bits = np.packbits(np.asarray(answers, dtype=np.bool_), bitorder="little")
    return bits.tolist() if n else []


def _inputs(rng: random.Random, n: int) -> list[tuple[str, Any, list[Any]]]:
    """(name, batch, the same keys as Python objects, None for a null row)."""
    ints = [rng.randrange(-2**63, 2**63) if i % 7 != 3 else None for i in range(n)]
    strs = ["".join(rng.choice("abé€") for _ in range(rng.randrange(0, 20))) for _ in range(n)]
    big = [rng.randrange(2**63, 2**64) for _ in range(n)]
    plain = [k for k in ints if k is not None]
    half = n // 2
    return [
        ("int64 with nulls", pa.array(ints, type=pa.int64()), ints),
        ("chunked", pa.chunked_array([pa.array(ints[:half], type=pa.int64()),
                                      pa.array(ints[half:], type=pa.int64())],
                                     type=pa.int64()), ints),
        ("large_string", pa.array(strs, type=pa.large_string()), list(strs)),
        ("uint64 >= 2**63", pa.array(big, type=pa.uint64()), big),
        ("numpy", np.array(plain, dtype=np.int64), plain),
        ("list", list(strs), list(strs)),
        ("iterator", iter(plain), plain),
    ]


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 2047, 2048, 2049, 5000])
@pytest.mark.parametrize("name", sorted(_CASES))
def test_contains_bits_writes_contains_many_or_declines(name: str, n: int,
                                                        rng: random.Random) -> None:
    """Every kind with contains_many takes it: bit i of the output is
    contains_many's row i (a null row False), the bits past the last row
    are 0.  Lengths around a byte, a DuckDB vector and the 4,096-row scratch."""
    case = _CASES[name]
    for label, batch, keys in _inputs(rng, n):
        obj = case.make()
        present = list(dict.fromkeys(k for k in keys[::3] if k is not None))
        if present:
            case.add_many(obj, present)
        answers = obj.contains_many([0 if k is None else k for k in keys])
        want = [k is not None and bool(x) for k, x in zip(keys, answers, strict=True)]
        out = np.full((len(keys) + 7) // 8, 0xA5, dtype=np.uint8)
        assert _core.contains_bits(obj, batch, out) is True, (name, label)
        assert out.tolist() == _packed(want, len(keys)), (name, label)


def test_contains_bits_declines_what_it_cannot_run() -> None:
    """Not a bloomkit filter, or contains_many overridden in Python: False,
    nothing written (duckdb_register then packs contains_many's answers)."""
    out = np.full(1, 0xA5, np.uint8)
    assert _core.contains_bits(object(), [1], out) is False
    assert _core.contains_bits(_Declines(100, 0.01), [1], out) is False
    assert out.tolist() == [0xA5]

    class Plain(BlockedBloomFilter):  # inherits the C contains_many: taken
        pass

    p = Plain(100, 0.01)
    p.add(1)
    assert _core.contains_bits(p, [1, 2], out) is True and out.tolist() == [1]


def test_contains_bits_refuses_a_wrong_output_buffer() -> None:
    f = BlockedBloomFilter(100, 0.01)
    f.add(5)
    keys = pa.array([5] * 10)  # 10 rows: 2 bytes
    for size in (1, 3):
        with pytest.raises(ValueError, match="10 rows need 2 bytes"):
            _core.contains_bits(f, keys, np.zeros(size, np.uint8))
    with pytest.raises(ValueError, match="3 rows need 1 bytes"):
        _core.contains_bits(f, iter([5, 5, 5]), np.zeros(2, np.uint8))
    with pytest.raises(BufferError):
        _core.contains_bits(f, keys, bytes(2))
    with pytest.raises((ValueError, BufferError)):
        _core.contains_bits(f, keys, np.zeros(4, np.uint8)[::2])
    with pytest.raises(TypeError):
        _core.contains_bits(f, keys)  # type: ignore[call-arg]
