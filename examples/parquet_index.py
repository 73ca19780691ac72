"""A sidecar index over a small Parquet lake, through the command line.

    python examples/parquet_index.py [--files 4] [--rows 50000] [--dir DIR]

Writes a lake of FILES Parquet files (user_id: INT64, RUNS of consecutive
ids per file, 10,000 rows per row group) with pyarrow, then runs, as a
shell would:

    bloomkit parquet index 'lake/*.parquet' --column user_id -o lake/users.bkidx
    bloomkit parquet candidates lake/users.bkidx ...
    (a file is added to the lake: the index notices and says so)
    bloomkit parquet update lake/users.bkidx
    bloomkit parquet index ... --granularity row_group

and prints each command with its output (stderr included) and exit status.
docs/parquet.md and docs/cli.md quote this output (tests/test_docs.py runs
it).  Needs pyarrow (``pip install 'bloomkit[parquet]'``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shlex
import sys
import tempfile

from bloomkit.cli import main as bloomkit_main


def run(*argv: str) -> int:
    """Run one `bloomkit` command, print it and what it printed."""
    print("$ bloomkit " + " ".join(shlex.quote(a) for a in argv))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = bloomkit_main(list(argv))
    print(out.getvalue(), end="")
    if code:
        print(f"(exit {code})")
    return code


def write_file(path: str, first: int, rows: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids = pa.array(range(first, first + rows), pa.int64())
    pq.write_table(pa.table({"user_id": ids}), path, row_group_size=10_000)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=4, help="Parquet files in the lake")
    ap.add_argument("--rows", type=int, default=50_000, help="rows per file")
    ap.add_argument("--dir", help="work here (default: a temporary directory)")
    args = ap.parse_args(argv)
    with contextlib.ExitStack() as stack:
        work = args.dir or stack.enter_context(tempfile.TemporaryDirectory())
        os.makedirs(os.path.join(work, "lake"), exist_ok=True)
        here = os.getcwd()
        os.chdir(work)  # paths print as lake/part-N.parquet
        stack.callback(os.chdir, here)
        for i in range(args.files):
            write_file(f"lake/part-{i}.parquet", i * 100_000, args.rows)
        run("parquet", "index", "lake/*.parquet", "--column", "user_id",
            "-o", "lake/users.bkidx")
        probes = ["12345", "212345", str(args.files * 100_000 + 7)]
        run("parquet", "candidates", "lake/users.bkidx", *probes)
        new = args.files * 100_000
        write_file(f"lake/part-{args.files}.parquet", new, 10)
        print(f"(lake/part-{args.files}.parquet added to the lake)")
        run("parquet", "candidates", "lake/users.bkidx", probes[0], probes[2])
        run("parquet", "candidates", "--strict", "lake/users.bkidx", probes[0])
        run("parquet", "update", "lake/users.bkidx")
        run("parquet", "candidates", "lake/users.bkidx", *probes)
        run("parquet", "index", "lake/*.parquet", "--column", "user_id",
            "--granularity", "row_group", "-o", "lake/users_rg.bkidx")
        run("parquet", "candidates", "lake/users_rg.bkidx", *probes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
