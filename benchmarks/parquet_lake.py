"""Skipping Parquet files: their own Bloom filters and a sidecar index (issue #20).

Makes a lake of FILES Parquet files x ROWS rows (pyarrow, a split-block
Bloom filter on ``user_id``), then asks "which files may hold each of these
VALUES user ids?" three ways:

- ``bloomkit.parquet.may_contain``: footers and filters only (bytes counted);
- ``bloomkit.parquet.build_index`` once (timed), then ``open_index`` and
  ``candidates``: the index file only (its size is the bytes it can read);
- DuckDB scanning the lake: ``SELECT DISTINCT filename, user_id FROM
  read_parquet(..., filename = true) WHERE user_id IN (...)`` (DuckDB itself
  may use the statistics and filters to skip row groups).

and checks that every (value, file) the scan finds is among both answers'
candidates (no false negatives), and that the index's false-positive file
rate (candidate pairs the scan did not find, over every (value, file) pair
that does not hold) is within 3 standard errors of its error rate.  Prints
the machine block, then one JSON line.  Exit status 1 on a false negative
or a rate outside 3 SE.

    python benchmarks/parquet_lake.py                 # 200 files x 500,000 rows
    python benchmarks/parquet_lake.py --smoke         # 4 files x 20,000 rows

Times are wall-clock of one run on whatever machine runs it: compare them
only on an idle machine.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import machine


def make_lake(d: Path, files: int, rows: int, seed: int) -> list[int]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    rg = max(1, rows // 4)
    sample: list[int] = []
    for i in range(files):
        ids = rng.integers(0, 2**40, rows, dtype=np.int64)
        t = pa.table({"user_id": ids, "amount": rng.random(rows)})
        pq.write_table(t, d / f"part-{i:04d}.parquet", row_group_size=rg,
                       bloom_filter_options={"user_id": {"ndv": rg, "fpp": 0.01}})
        sample.extend(int(x) for x in ids[:: max(1, rows // 8)][:8])
    return sample


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--values", type=int, default=1000)
    ap.add_argument("--error-rate", type=float, default=0.01, help="the index's rate")
    ap.add_argument("--granularity", choices=("file", "row_group"), default="file")
    ap.add_argument("--dask", action="store_true", help="build the index with Dask tasks")
    ap.add_argument("--dir", help="reuse or create the lake here (default: a temporary dir)")
    ap.add_argument("--smoke", action="store_true", help="4 files x 20,000 rows, 50 values")
    ap.add_argument("--seed", type=int, default=20)
    a = ap.parse_args()
    if a.smoke:
        a.files, a.rows, a.values = 4, 20_000, 50
    machine.announce()
    import duckdb

    from bloomkit import parquet

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(a.dir or tmp)
        d.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        present = make_lake(d, a.files, a.rows, a.seed)
        make_s = time.perf_counter() - t0
        r = random.Random(a.seed)
        half = a.values // 2
        values = r.sample(present, min(half, len(present)))
        values += [r.randrange(2**40) for _ in range(a.values - len(values))]
        pattern = str(d / "*.parquet")
        lake_bytes = sum(os.path.getsize(p) for p in glob.glob(pattern))

        t0 = time.perf_counter()
        res = parquet.may_contain(pattern, "user_id", values)
        ours_s = time.perf_counter() - t0

        index_path = Path(tmp) / "lake.bkidx"
        t0 = time.perf_counter()
        parquet.build_index(pattern, "user_id", a.error_rate, a.granularity,
                            output=index_path, dask=a.dask).close()
        build_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        idx = parquet.open_index(index_path)
        open_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        cands = idx.candidates(values)
        cand_s = time.perf_counter() - t0
        idx.close()

        con = duckdb.connect()
        t0 = time.perf_counter()
        found = con.execute(
            "SELECT DISTINCT filename, user_id FROM read_parquet(?, filename = true) "
            "WHERE user_id IN (SELECT unnest(?::BIGINT[]))", [pattern, values]).fetchall()
        scan_s = time.perf_counter() - t0

        truth = {(v, os.path.basename(f)) for f, v in found}
        ours = {(v, os.path.basename(p)) for v, hits in res.items() for p, _ in hits}
        indexed = {(v, os.path.basename(p)) for v, hits in cands.items() for p, _ in hits}
        missed = truth - ours
        missed_idx = truth - indexed
        # false-positive file rate of the index: over the (value, file) pairs
        # that do not hold the value (row groups counted as their files)
        negatives = len(set(values)) * a.files - len(truth)
        fp = len(indexed - truth)
        rate = fp / negatives if negatives else 0.0
        se = math.sqrt(a.error_rate * (1 - a.error_rate) / negatives) if negatives else 0.0
        within = abs(rate - a.error_rate) <= 3 * se
        out = {
            "files": a.files, "rows_per_file": a.rows, "values": len(values),
            "lake_bytes": lake_bytes, "make_lake_s": round(make_s, 2),
            "may_contain_s": round(ours_s, 3), "may_contain_bytes_read": res.bytes_read,
            "filters_read": res.filters_read,
            "candidate_files": len({f for _, f in ours}),
            "candidate_pairs": len(ours), "true_pairs": len(truth),
            "duckdb_scan_s": round(scan_s, 3), "false_negatives": len(missed),
            "index_granularity": a.granularity, "index_error_rate": a.error_rate,
            "index_build_s": round(build_s, 2), "index_bytes": index_path.stat().st_size,
            "index_open_s": round(open_s, 4), "index_candidates_s": round(cand_s, 4),
            "index_candidate_pairs": len(indexed), "index_false_negatives": len(missed_idx),
            "index_fp_file_rate": round(rate, 5), "index_fp_se": round(se, 5),
            "index_fp_within_3se": within,
            "scan_over_candidates": round(scan_s / cand_s, 1) if cand_s else None,
            "scan_over_open_and_candidates": round(scan_s / (open_s + cand_s), 1),
        }
        print(json.dumps(out))
        return 1 if missed or missed_idx or not within else 0


if __name__ == "__main__":
    sys.exit(main())
