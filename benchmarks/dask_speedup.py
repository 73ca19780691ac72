"""Speed-up of a bloomkit.dask build on 2 worker processes over 1.

Writes ``--files`` Parquet files of ``--rows`` rows in total (a string key
column "user" and an int64 column "order_id"; pandas + pyarrow), then builds
a BloomFilter over each key column on a distributed.LocalCluster with 1 and
with 2 worker processes (threads_per_worker=1), ``--repeat`` times each, and
reports medians.  A one-process baseline (pandas reads the files, add_many
in a loop, no dask) is measured too, and every build is checked
byte-identical to it.

    python benchmarks/dask_speedup.py --rows 20_000_000 --files 40

The cluster start-up and one warm-up build are not timed; reading Parquet is (it is part of the
job).  On a shared machine, report the load average beside the figure.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path

import _checkout  # noqa: F401  (the in-place build, else the install)
import machine
import numpy as np
import pandas as pd


def write_parquet(directory: Path, rows: int, files: int, seed: int = 1) -> list[str]:
    rng = np.random.default_rng(seed)
    paths = []
    per = -(-rows // files)
    for i in range(files):
        n = min(per, rows - i * per)
        ids = rng.integers(0, 2**62, size=n, dtype=np.int64)
        frame = pd.DataFrame(
            {
                "user": pd.Series([f"user-{x:016x}" for x in ids >> 8], dtype="string"),
                "order_id": ids,
            }
        )
        path = directory / f"part-{i:04d}.parquet"
        frame.to_parquet(path, engine="pyarrow", index=False)
        paths.append(str(path))
    return paths


def single_process(paths: list[str], column: str, capacity: int) -> tuple[float, bytes]:
    from bloomkit import BloomFilter

    t = time.perf_counter()
    f = BloomFilter(capacity, 0.01)
    for p in paths:
        col = pd.read_parquet(p, columns=[column])[column]
        arr = col.to_numpy()
        f.add_many(arr if arr.dtype.kind in "iu" else col.tolist())
    f._recount()
    return time.perf_counter() - t, f.to_bytes()


def on_cluster(paths: list[str], column: str, capacity: int, workers: int,
               repeat: int) -> tuple[list[float], bytes]:
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    import bloomkit.dask as bkd
    from bloomkit import BloomFilter

    times: list[float] = []
    data = b""
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None, silence_logs=logging.ERROR) as cluster, \
            Client(cluster) as client:
        client.wait_for_workers(workers)
        # Untimed warm-up: workers import pandas, pyarrow and dask.dataframe on first use.
        bkd.build(dd.read_parquet(paths[:workers], columns=[column])[column], BloomFilter,
                  capacity, 0.01)
        for _ in range(repeat):
            t = time.perf_counter()
            keys = dd.read_parquet(paths, columns=[column])[column]
            f = bkd.build(keys, BloomFilter, capacity, 0.01)
            times.append(time.perf_counter() - t)
            data = f.to_bytes()
    return times, data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=lambda s: int(s.replace("_", "")), default=4_000_000)
    ap.add_argument("--files", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--columns", default="user,order_id")
    ap.add_argument("--dir", default=None, help="reuse/keep Parquet files here")
    args = ap.parse_args()
    machine.announce()

    tmp = None
    directory = Path(args.dir) if args.dir else Path(tmp := tempfile.mkdtemp(prefix="bk-dask-"))
    directory.mkdir(parents=True, exist_ok=True)
    paths = sorted(str(p) for p in directory.glob("part-*.parquet"))
    if len(paths) != args.files:
        t = time.perf_counter()
        paths = write_parquet(directory, args.rows, args.files)
        print(f"wrote {args.rows:,} rows in {args.files} Parquet files "
              f"({sum(os.path.getsize(p) for p in paths) / 2**20:.0f} MiB) "
              f"in {time.perf_counter() - t:.1f} s")
    print(f"cpus: {os.cpu_count()}, load average before: {os.getloadavg()[0]:.2f}")
    for column in args.columns.split(","):
        base, ref = single_process(paths, column, args.rows)
        t1, b1 = on_cluster(paths, column, args.rows, 1, args.repeat)
        t2, b2 = on_cluster(paths, column, args.rows, 2, args.repeat)
        assert b1 == ref and b2 == ref, "distributed build differs from the single build"
        m1, m2 = statistics.median(t1), statistics.median(t2)
        print(f"column {column!r}: filter {len(ref) / 2**20:.1f} MiB, byte-identical: yes")
        print(f"  one process, no dask : {base:7.2f} s  ({base / args.rows * 1e9:6.0f} ns/row)")
        print(f"  dask, 1 worker       : {m1:7.2f} s  runs {[round(x, 2) for x in t1]}")
        print(f"  dask, 2 workers      : {m2:7.2f} s  runs {[round(x, 2) for x in t2]}")
        print(f"  speed-up 2 vs 1 worker: {m1 / m2:.2f}x")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if tmp is not None:
        for p in paths:
            os.unlink(p)
        os.rmdir(tmp)


if __name__ == "__main__":
    main()
