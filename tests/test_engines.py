"""bloomkit.engines (docs/engines.md): a filter as a DuckDB function.

``duckdb_register``'s function answers every row as ``contains_many`` does
(nulls: NULL), on one and on two DuckDB threads, across many vectors and a
last partial one, for integer and string keys; the per-thread result Tables
it refills in place never show one call's answers in another's rows.
"""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest

from bloomkit import BlockedBloomFilter, engines

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
