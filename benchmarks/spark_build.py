"""bloomkit.spark.build of a BlockedBloomFilter against Spark's own df.stat.bloomFilter.

    python benchmarks/spark_build.py [--rows 10000000] [--repeats 3] [--smoke] [--json PATH]

One local[2] Spark session; a DataFrame of --rows distinct 62-bit long keys
(id * 2654435761 mod 2^62, computed by Spark and cached, so both builds read
the same cached rows); then, alternating, --repeats times each:

- Spark: ``df.stat.bloomFilter("k", rows, 0.01)`` (through the JVM: PySpark
  does not wrap it), its bytes fetched to Python;
- bloomkit: ``bloomkit.spark.build(df, "k", rows, 0.01,
  kind=bloomkit.BlockedBloomFilter)`` (mapInArrow + treeReduce).

Wall times are printed per run with the best and the ratio bloomkit/Spark,
and the false-positive rate of each filter measured over 10^6 keys known
absent; once, for context, Spark's format built by bloomkit without the size
caps Spark's aggregate applies (``spark_caps=False``: past 4e6 items or 2^26
bits df.stat.bloomFilter is smaller than the formula asks).  Spark's filter
is probed through bloomkit.spark.BloomFilter, whose answers equal Spark's
mightContain (tests/test_spark.py).  --smoke: 10^5 rows, one run each, no
ratio judged (CI).  Timings are never asserted.  Results go to
``$BLOOMKIT_BENCH_OUT`` (default <temp dir>/bloomkit-bench) as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from typing import Any

import machine


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--error-rate", type=float, default=0.01)
    ap.add_argument("--smoke", action="store_true", help="10^5 rows, one run each (CI)")
    ap.add_argument("--json", default=None, help="where to write the results")
    ap.add_argument("--no-spark-caps", action="store_true",
                    help="raise Spark's two bloom_filter_agg caps (maxNumItems, maxNumBits) so "
                         "that df.stat.bloomFilter is sized by the formula, as bloomkit's filter")
    args = ap.parse_args(argv)
    if args.smoke:
        args.rows, args.repeats = 100_000, 1
    try:
        import numpy as np
        from pyspark.sql import SparkSession
    except ImportError as exc:
        print(f"spark_build: {exc}; pip install '.[spark]' (and a Java 17+ runtime)")
        return 0 if args.smoke else 2
    if shutil.which("java") is None:
        print("spark_build: no java on PATH (apt-get install default-jre-headless)")
        return 0 if args.smoke and os.environ.get("CI", "").lower() not in ("1", "true") else 2

    import bloomkit
    from bloomkit import spark as bks

    info = machine.announce()
    session = (SparkSession.builder.master("local[2]").appName("bloomkit-spark-build")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.memory", "2g")
               .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    n, p = args.rows, args.error_rate
    if args.no_spark_caps:
        session.conf.set("spark.sql.optimizer.runtime.bloomFilter.maxNumItems", str(10**12))
        session.conf.set("spark.sql.optimizer.runtime.bloomFilter.maxNumBits", str(2**36))
    df = session.range(0, n, numPartitions=8).selectExpr(
        "(id * 2654435761) % 4611686018427387904 as k").cache()
    assert df.count() == n
    jvm = session._jvm

    def spark_build() -> bytes:
        jf = df._jdf.stat().bloomFilter("k", n, p)
        out = jvm.java.io.ByteArrayOutputStream()
        jf.writeTo(out)
        return bytes(out.toByteArray())

    def ours() -> Any:
        return bks.build(df, "k", n, p, kind=bloomkit.BlockedBloomFilter)

    runs: dict[str, list[float]] = {"spark": [], "bloomkit": []}
    built: dict[str, Any] = {}
    for _ in range(args.repeats):
        for name, fn in (("spark", spark_build), ("bloomkit", ours)):
            t = time.perf_counter()
            built[name] = fn()
            runs[name].append(time.perf_counter() - t)
            print(f"  {name:9s} {runs[name][-1]:8.2f} s", flush=True)

    # For context, once: Spark's format without the size caps of Spark's
    # aggregate (bloomkit.spark.build, spark_caps=False): what the formula gives.
    t = time.perf_counter()
    built["spark-format uncapped"] = bks.build(df, "k", n, p, spark_caps=False)
    runs["spark-format uncapped"] = [time.perf_counter() - t]
    print(f"  {'bloomkit, Spark format, no caps':9s} {runs['spark-format uncapped'][0]:8.2f} s",
          flush=True)

    # 10^6 keys that no row holds: ids beyond n map to other residues, but to be
    # sure use odd keys above 2^62 (every row key is below 2^62)
    absent = (np.arange(1_000_000, dtype=np.int64) * 2 + 1) + (1 << 62)
    spark_filter = bks.BloomFilter.from_bytes(built["spark"])
    fpr = {"spark": float(spark_filter.contains_many(absent).mean()),
           "bloomkit": float(built["bloomkit"].contains_many(absent).mean()),
           "spark-format uncapped":
               float(built["spark-format uncapped"].contains_many(absent).mean())}
    present = np.array([0, 2654435761, (2 * 2654435761) % (1 << 62)], dtype=np.int64)
    assert spark_filter.contains_many(present).all()
    assert built["bloomkit"].contains_many(present).all()
    best = {k: min(v) for k, v in runs.items()}
    ratio = best["bloomkit"] / best["spark"]
    sizes = {"spark": spark_filter.bit_size // 8, "bloomkit": len(built["bloomkit"].to_bytes()),
             "spark-format uncapped": built["spark-format uncapped"].bit_size // 8}
    print(f"rows {n:,}, error_rate {p}, local[2], best of {args.repeats}:")
    caps = ("caps raised" if args.no_spark_caps
            else "Spark's aggregate caps it: 4e6 items, 2^26 bits")
    print(f"  spark    = df.stat.bloomFilter ({caps})")
    print("  bloomkit = bloomkit.spark.build(kind=BlockedBloomFilter)")
    for k in ("spark", "bloomkit", "spark-format uncapped"):
        print(f"  {k:22s} {best[k]:8.2f} s  measured FPR {fpr[k]:.5f}  "
              f"{sizes[k] / 2**20:6.1f} MiB")
    print(f"  ratio bloomkit/spark {ratio:.2f}x (target <= 2x); FPR bloomkit <= spark: "
          f"{fpr['bloomkit'] <= fpr['spark']}")
    load = machine.load_average()
    print(f"  load average {load}")
    result = {"spark_caps": not args.no_spark_caps, "rows": n, "error_rate": p, "runs": runs,
              "best": best, "ratio": ratio, "fpr": fpr, "bytes": sizes, "load": load,
              "machine": info}
    name = "spark_build_nocaps.json" if args.no_spark_caps else "spark_build.json"
    path = args.json or os.path.join(machine.results_dir(), name)
    with open(path, "w") as fh:
        json.dump(result, fh, indent=1, default=str)
    print(f"  results: {path}")
    session.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
