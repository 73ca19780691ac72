"""Membership inside query engines (issue #33.4, docs/engines.md), one run.

    PYTHONPATH=src python benchmarks/engines.py            10^7 rows
    PYTHONPATH=src python benchmarks/engines.py --smoke    10^4 rows (CI: it runs, nothing timed)

Every figure is a ratio to a peer measured in the same process, the cells
alternated, the median of --repeat runs (wall clock, time.perf_counter):

  ints     contains_many of n random int64 keys (half present) as a numpy
           array (the peer), a pyarrow Array, a pyarrow ChunkedArray of 8
           chunks and a Polars Series;
  strings  the same keys as decimal strings (7..19 bytes): a numpy 'S'
           array (the buffer path of fixed-width bytes, the peer), a pyarrow
           string Array, a Polars Series (string_view) and a list of str;
  duckdb   SELECT count(*) FROM t WHERE seen(uid) over a BIGINT column of n
           rows, seen() registered by bloomkit.engines.duckdb_register,
           on DuckDB with 1 and with 2 threads, against
           contains_many(numpy column).sum() (the peer, one thread), and
           floors: const(uid), an Arrow UDF that hashes nothing and
           returns all True (DuckDB calls a Python function once per
           vector of 2,048 rows; this is its own cost of those calls, with
           an array built per call), cached(uid), one that returns the same
           prebuilt Table every call (DuckDB's cost alone), contains_many
           over the column's 2,048-row vectors outside DuckDB (the
           hashing's own share), and
           DuckDB's SELECT count(*) FROM t WHERE uid % 2 = 0; and the
           column fetched whole as DuckDB's Arrow stream into one
           contains_many call;
  polars   df.filter(bloomkit.engines.polars_contains(f, "uid")).height
           against the numpy peer.

The filter is a BlockedBloomFilter(n, 0.01) holding every other key.  The
answers of every path are checked equal to the peer's before timing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import machine
import numpy as np

import bloomkit
from bloomkit import engines


def _median_ratios(cells: dict[str, Callable[[], Any]], peer: str, repeat: int
                   ) -> dict[str, dict[str, float]]:
    times: dict[str, list[float]] = {k: [] for k in cells}
    for _ in range(repeat):
        for name, run in cells.items():  # alternated: load changes hit every cell alike
            t0 = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - t0)
    base = statistics.median(times[peer])
    return {k: {"seconds": statistics.median(v), "ratio": statistics.median(v) / base}
            for k, v in times.items()}


def _const(keys: Any) -> Any:
    """An Arrow UDF that hashes nothing (all True): DuckDB's own cost per call."""
    import pyarrow as pa

    return pa.array(np.ones(len(keys), dtype=np.bool_))


def _cached() -> Callable[[Any], Any]:
    """An Arrow UDF that returns one prebuilt all-True Table per length: DuckDB's
    own cost per call, without even the building of an answer."""
    import pyarrow as pa

    tables: dict[int, Any] = {}

    def cached(keys: Any) -> Any:
        t = tables.get(len(keys))
        if t is None:
            t = tables[len(keys)] = pa.table({"c0": pa.array(np.ones(len(keys), np.bool_))})
        return t

    return cached


def run(n: int, repeat: int) -> dict[str, Any]:
    import duckdb
    import polars as pl
    import pyarrow as pa

    rng = np.random.default_rng(33)
    keys = rng.integers(0, 2**62, n, dtype=np.int64)
    f = bloomkit.BlockedBloomFilter(n, 0.01, seed=7)
    f.add_many(keys[::2])
    want = f.contains_many(keys)
    out: dict[str, Any] = {"n": n, "repeat": repeat}

    arr = pa.array(keys)
    chunked = pa.chunked_array(np.array_split(keys, 8))
    series = pl.Series("uid", keys)
    for x in (arr, chunked, series):
        assert (f.contains_many(x) == want).all()
    out["ints"] = _median_ratios({
        "numpy": lambda: f.contains_many(keys),
        "pyarrow": lambda: f.contains_many(arr),
        "pyarrow chunked": lambda: f.contains_many(chunked),
        "polars": lambda: f.contains_many(series),
    }, "numpy", repeat)

    strs = keys.astype("S19")  # decimal digits, 7..19 bytes (numpy strips no byte here)
    slist = [s.decode() for s in strs.tolist()]
    sarr = pa.array(slist)
    sseries = pl.Series(slist)
    g = bloomkit.BlockedBloomFilter(n, 0.01, seed=7)
    g.add_many(sarr[::2])
    swant = g.contains_many(strs)
    for x in (sarr, sseries, slist):
        assert list(g.contains_many(x)) == list(swant)
    out["strings"] = _median_ratios({
        "numpy S19": lambda: g.contains_many(strs),
        "pyarrow": lambda: g.contains_many(sarr),
        "polars": lambda: g.contains_many(sseries),
        "list of str": lambda: g.contains_many(slist),
    }, "numpy S19", repeat)

    cons = {}
    count = int(want.sum())
    sql = "SELECT count(*) FROM t WHERE seen(uid)"
    for threads in (1, 2):
        con = duckdb.connect()
        con.execute(f"SET threads TO {threads}")
        con.register("src", pa.table({"uid": arr}))
        con.execute("CREATE TABLE t AS SELECT uid FROM src")
        con.unregister("src")
        engines.duckdb_register(con, "seen", f)
        con.create_function("const", _const, ["BIGINT"], "BOOLEAN", type="arrow")
        con.create_function("cached", _cached(), ["BIGINT"], "BOOLEAN", type="arrow")
        assert con.execute(sql).fetchall() == [(count,)]
        cons[threads] = con
    con1, con2 = cons[1], cons[2]
    vectors = [arr.slice(i, 2048) for i in range(0, len(arr), 2048)]
    df = pl.DataFrame({"uid": series})
    expr = engines.polars_contains(f, "uid")
    assert df.filter(expr).height == count
    out["engines"] = _median_ratios({
        "numpy contains_many": lambda: int(f.contains_many(keys).sum()),
        "duckdb WHERE seen(uid), 1 thr": lambda: con1.execute(sql).fetchall(),
        "duckdb WHERE seen(uid), 2 thr": lambda: con2.execute(sql).fetchall(),
        "contains_many(duckdb rel)": lambda: int(
            f.contains_many(con1.sql("SELECT uid FROM t")).sum()),
        "duckdb WHERE const(uid), 1 thr": lambda: con1.execute(
            "SELECT count(*) FROM t WHERE const(uid)").fetchall(),
        "duckdb WHERE cached(uid), 1 thr": lambda: con1.execute(
            "SELECT count(*) FROM t WHERE cached(uid)").fetchall(),
        "contains_many per 2,048 rows": lambda: [f.contains_many(v) for v in vectors],
        "duckdb WHERE uid % 2 = 0, 1 thr": lambda: con1.execute(
            "SELECT count(*) FROM t WHERE uid % 2 = 0").fetchall(),
        "polars filter": lambda: df.filter(expr).height,
    }, "numpy contains_many", repeat)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="10^4 rows, 1 repeat (CI)")
    ap.add_argument("--n", type=int, default=10**7)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None, help="directory for engines.json")
    args = ap.parse_args()
    info = machine.announce()
    n, repeat = (10**4, 1) if args.smoke else (args.n, args.repeat)
    res = run(n, repeat)
    for section in ("ints", "strings", "engines"):
        print(f"## {section} (n = {n:,}, median of {repeat}; ratio to the first line)")
        for name, cell in res[section].items():
            print(f"  {name:28s} {cell['seconds'] * 1e3:9.1f} ms   {cell['ratio']:5.2f}x")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        res["machine"] = info
        name = "engines-smoke.json" if args.smoke else "engines.json"
        (args.out / name).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
