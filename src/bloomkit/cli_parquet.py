"""``bloomkit parquet ...``: probe Parquet files through their Bloom filters.

Kept apart from cli.py (which only registers it):

    bloomkit parquet probe FILES --column C VALUE...

FILES is one path, a directory (every ``*.parquet`` below it) or a quoted
glob.  Values are parsed by the column's type as the files' schema gives it
(ints, floats, ISO dates and timestamps, decimals, strings; ``0x...`` hex for
raw byte arrays).  For each value, one line: the value, a tab, and the
``file#row_group`` pairs that may hold it (``-`` for none).  A summary (bytes
read, files, row groups, filters read) goes to stderr.  Exit status 0 when
every value may be somewhere, 1 when some value is in no row group.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from . import parquet
from ._pq_footer import CountingFile, read_footer
from ._pq_values import value_from_text
from .cli_io import CliError

EXAMPLE = "bloomkit parquet probe 'lake/*.parquet' --column user_id 12345 67890"


def register(sub: Any, epilog: str) -> None:
    """Add the ``parquet`` command to cli.py's subparsers."""
    desc = "probe Parquet files' own Bloom filters and statistics (see docs/parquet.md)"
    p = sub.add_parser("parquet", help=desc, description=desc,
                       epilog=f"example:\n  {EXAMPLE}\n\n{epilog}")
    psub = p.add_subparsers(dest="parquet_command", required=True, metavar="SUBCOMMAND",
                            parser_class=type(p))
    q = psub.add_parser("probe", help="which files and row groups may hold each value",
                        description="which files and row groups may hold each value",
                        epilog=f"example:\n  {EXAMPLE}\n\n{epilog}")
    q.add_argument("files", metavar="FILES", help="a Parquet file, a directory or a quoted glob")
    q.add_argument("values", nargs="+", metavar="VALUE", help="values to look for")
    q.add_argument("--column", "-c", required=True, help="column (dotted path for nested ones)")
    q.add_argument("--no-stats", action="store_true",
                   help="use Bloom filters only, not min/max statistics")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    q.set_defaults(func=cmd_probe)


def _paths(spec: str) -> list[str]:
    if os.path.isdir(spec):
        spec = os.path.join(spec, "**", "*.parquet")
    paths = parquet._expand(spec)
    if not paths:
        raise CliError(f"no Parquet file under {spec!r}")
    return paths


def cmd_probe(args: argparse.Namespace) -> int:
    try:
        return _probe(args)
    except (KeyError, IndexError) as e:  # an unknown column: the message names the file
        raise CliError(str(e.args[0]) if e.args else type(e).__name__) from None


def _probe(args: argparse.Namespace) -> int:
    paths = _paths(args.files)
    with CountingFile(paths[0]) as f:  # the first file's schema types the values
        footer = read_footer(f)
        col = footer.columns[footer.column_index(args.column)]
    values = [value_from_text(col, t) for t in args.values]
    res = parquet.may_contain(paths, args.column, values, use_stats=not args.no_stats)
    hits = [res[parquet._key(v)] for v in values]
    if args.json:
        out = {
            "column": args.column,
            "type": col.describe(),
            "values": [{"value": t, "candidates": [[p, g] for p, g in h]}
                       for t, h in zip(args.values, hits, strict=True)],
            "bytes_read": res.bytes_read, "files": res.files, "row_groups": res.row_groups,
            "filters_read": res.filters_read,
        }
        print(json.dumps(out))
    else:
        for t, h in zip(args.values, hits, strict=True):
            print(f"{t}\t{' '.join(f'{p}#{g}' for p, g in h) or '-'}")
    if not args.quiet and not args.json:
        print(f"read {res.bytes_read} bytes (footers and filters) of {res.files} file(s), "
              f"{res.row_groups} row group(s), {res.filters_read} Bloom filter(s)",
              file=sys.stderr)
    return 0 if all(hits) else 1
