"""Issue #19: benchmarks/scale.py's children at one size, alternating
between source trees (e.g. main's and a branch's), so that a before/after
comparison shares the machine's load:

    python benchmarks/scale_alternate.py --tree main=/work/main/src --tree new=src \\
        --dir /tmp/bkscale2 --n 1e8

For each round and tree: the in-memory build + save, ``create()`` +
``add_many`` + ``close`` (their ratio, wall and CPU), the batch queries in
memory and on the mapped file, and line_probe's limits measured right
after.  Needs the key files and ``cli-N.bkf`` that ``scale.py --dir`` left
(same filter bytes whichever tree built it).  Nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import machine
import scale


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", required=True, help="NAME=PYTHONPATH")
    ap.add_argument("--dir", required=True, help="scale.py's work directory")
    ap.add_argument("--n", default="1e8")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", default=None,
                    help="results file (default: scale-alternate.json in $BLOOMKIT_BENCH_OUT, "
                         "else <temp dir>/bloomkit-bench; never the source tree unless named)")
    args = ap.parse_args()
    work, n = Path(args.dir), int(float(args.n))
    keys, absent = work / f"keys-{n}.npy", work / f"absent-{n}.npy"
    built = work / f"cli-{n}.bkf"
    trees = dict(t.split("=", 1) for t in args.tree)
    info = machine.announce()
    if args.json is None:
        args.json = str(machine.results_dir() / "scale-alternate.json")
    out: dict[str, Any] = {"machine": info}
    for rnd in range(args.rounds):
        for name, tree in trees.items():
            os.environ["PYTHONPATH"] = str(Path(tree).resolve())
            inm = scale.run_child(scale.INMEM.format(keys=str(keys), out=str(work / "alt-mem.bkf"),
                                                     chunk=scale.CHUNK), work)
            cr = scale.run_child(scale.CREATE.format(keys=str(keys),
                                                     out=str(work / "alt-create.bkf"),
                                                     chunk=scale.CHUNK), work)
            os.unlink(work / "alt-create.bkf")
            q = scale.run_child(scale.QUERY.format(keys=str(keys), absent=str(absent),
                                                   path=str(built), qn=min(n, scale.QUERY_N)),
                                work)
            r: dict[str, Any] = {
                "inmem_wall": inm["wall_s"], "inmem_cpu": inm["cpu_s"],
                "inmem_build_ns": inm["build_s"] * 1e9 / n,
                "create_wall": cr["wall_s"], "create_cpu": cr["cpu_s"],
                "create_add_ns": cr["add_s"] * 1e9 / n,
                "ratio_wall": cr["wall_s"] / inm["wall_s"], "ratio_cpu": cr["cpu_s"] / inm["cpu_s"],
                "q_mem_ns": q["batch_ns"], "q_mapped_ns": q["mapped_batch_ns"], "load": cr["load"],
            }
            lim = scale.probe(work, built.stat().st_size)
            r.update(lim)
            if lim:
                r["q_mem/limit_thp"] = r["q_mem_ns"] / lim["limit_thp_ns"]
                r["q_mapped/limit_4k"] = r["q_mapped_ns"] / lim["limit_nothp_ns"]
            out.setdefault(name, []).append(r)
            print(rnd, name, json.dumps({k: round(v, 2) for k, v in r.items()}), flush=True)
    Path(args.json).write_text(json.dumps(out, indent=1))
    print(f"# stored {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
