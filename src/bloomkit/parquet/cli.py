"""``bloomkit parquet ...``: probe Parquet files through their Bloom filters,
and build and query a sidecar index of a lake.

Kept apart from the bloomkit/cli package (its parser only registers it):

    bloomkit parquet probe FILES --column C VALUE...
    bloomkit parquet index FILES... --column C -o lake.bkidx
    bloomkit parquet candidates lake.bkidx VALUE...
    bloomkit parquet update lake.bkidx

FILES is one path, a directory (every ``*.parquet`` below it) or a quoted
glob.  Values are parsed by the column's type as the files' schema gives it
(ints, floats, ISO dates and timestamps, decimals, strings; ``0x...`` hex for
raw byte arrays).  For each value, one line: the value, a tab, and the
``file#row_group`` pairs that may hold it (``-`` for none).  A summary (bytes
read, files, row groups, filters read) goes to stderr.  Exit status 0 when
every value may be somewhere, 1 when some value is in no row group.

``candidates`` prints the same lines from an index (``file`` alone for a
per-file index, ``file#row_group`` for a per-row-group one).  A stale index
(files changed, added or removed since ``index``) answers changed and added
files as candidates for every value and says so in one warning line on
stderr; ``--strict`` refuses instead (exit 5).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import warnings
from typing import Any

from .. import parquet
from ..cli.errors import CliError
from .footer import CountingFile, read_footer
from .sbbf import expand_paths, value_key
from .values import value_from_text

EXAMPLE = "bloomkit parquet probe 'lake/*.parquet' --column user_id 12345 67890"
INDEX_EXAMPLE = "bloomkit parquet index 'lake/*.parquet' --column user_id -o lake/users.bkidx"
CANDIDATES_EXAMPLE = "bloomkit parquet candidates lake/users.bkidx 12345 67890"
EXIT_STALE = 5  # --strict and the lake changed: like an unclean file, not to be trusted now

# `bloomkit parquet --help` and each subcommand's: its own statuses (#31 item 11)
EXIT_HELP = """exit statuses:
  0  probe, candidates: every value may be somewhere; index, update: done
  1  probe, candidates: some value is in no file or row group
  2  usage error, missing file, unknown column, a file over --max-bytes,
     a lake or index outside the index's directory without --allow-outside,
     any other error
  3  corrupt Parquet file or index (lengths, counts, offsets, checksum)
  4  unsupported: an encrypted footer, a type pyarrow cannot read, an index
     written by a later bloomkit
  5  candidates --strict: the lake changed since the index was built
Errors are one line on stderr: `bloomkit parquet SUBCOMMAND: error: ...`."""


def register(sub: Any, epilog: str) -> None:
    """Add the ``parquet`` command to the subparsers of bloomkit/cli/parser.py."""
    epilog = EXIT_HELP
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
    q.set_defaults(func=cmd_probe, command_name="parquet probe")

    x = psub.add_parser(
        "index", help="write a sidecar index: which files / row groups may hold each value",
        description="index one column of a lake into ONE bloomkit file (a blocked Bloom "
                    "filter per file or row group; docs/parquet.md)",
        epilog=f"example:\n  {INDEX_EXAMPLE}\n\n{epilog}")
    x.add_argument("files", nargs="+", metavar="FILES",
                   help="Parquet files, directories or quoted globs (globs and directories "
                        "are recorded: files added later are noticed)")
    x.add_argument("--column", "-c", required=True, help="column (dotted path for nested ones)")
    x.add_argument("-o", "--output", required=True, help="the index file to write")
    x.add_argument("-p", "--error-rate", type=float, default=0.01,
                   help="false-positive rate of each entry's filter (default 0.01)")
    x.add_argument("--granularity", choices=("file", "row_group"), default="file",
                   help="one filter per file (default) or per row group")
    x.add_argument("--dask", action="store_true",
                   help="index the files as Dask tasks on the current scheduler")
    x.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    x.add_argument("--allow-outside", action="store_true",
                   help="allow files and globs outside the index's directory (readers of "
                        "the index must pass --allow-outside too)")
    x.set_defaults(func=cmd_index, command_name="parquet index")

    c = psub.add_parser(
        "candidates", help="which files / row groups may hold each value, from an index",
        description="which files (or row groups) may hold each value, from a sidecar index "
                    "written by `bloomkit parquet index`",
        epilog=f"example:\n  {CANDIDATES_EXAMPLE}\n\n{epilog}")
    c.add_argument("index", metavar="INDEX", help="the index file")
    c.add_argument("values", nargs="+", metavar="VALUE", help="values to look for")
    c.add_argument("--strict", action="store_true",
                   help="refuse (exit 5) when the lake changed since the index was built")
    c.add_argument("--no-check", action="store_true",
                   help="do not compare the files' sizes and times with the index's")
    c.add_argument("--no-verify", action="store_true",
                   help="skip the checksum of the index (its tables are checked anyway)")
    c.add_argument("--json", action="store_true", help="machine-readable output")
    _reader_options(c)
    c.set_defaults(func=cmd_candidates, command_name="parquet candidates")

    u = psub.add_parser(
        "update", help="re-index the files that changed, were added or removed",
        description="re-index what changed since the index was built (changed and added "
                    "files are read, removed ones dropped) and rewrite the index atomically",
        epilog=f"example:\n  bloomkit parquet update lake/users.bkidx\n\n{epilog}")
    u.add_argument("index", metavar="INDEX", help="the index file")
    u.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    _reader_options(u)
    u.set_defaults(func=cmd_update, command_name="parquet update")


def _reader_options(p: Any) -> None:
    from ..cli.parser import byte_size

    p.add_argument("--max-bytes", type=byte_size, default=None, metavar="SIZE",
                   help="refuse an index larger than SIZE (default: refuse a sparse one over "
                        "16 GiB before the checksum pass; 0: no limit)")
    p.add_argument("--allow-outside", action="store_true",
                   help="accept an index whose files lie outside its directory (built with "
                        "--allow-outside)")


def _max_bytes(args: argparse.Namespace) -> int | None:
    given = getattr(args, "max_bytes", None)
    if given is None:
        return None
    return given if given > 0 else sys.maxsize


def _paths(spec: str) -> list[str]:
    try:
        paths = expand_paths(spec)
    except FileNotFoundError:
        paths = []
    if not paths:
        raise CliError(f"no Parquet file under {spec!r}")
    return paths


def cmd_probe(args: argparse.Namespace) -> int:
    try:
        return _probe(args)
    except (KeyError, IndexError) as e:  # an unknown column: the message names the file
        raise CliError(str(e.args[0]) if e.args else type(e).__name__) from None


def _keyerrors(fn: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        try:
            code: int = fn(args)
        except (KeyError, IndexError) as e:
            raise CliError(str(e.args[0]) if e.args else type(e).__name__) from None
        except ImportError as e:
            raise CliError(str(e)) from None
        return code
    return run


def _where(path: str, g: int | None) -> str:
    return path if g is None else f"{path}#{g}"


@_keyerrors
def cmd_index(args: argparse.Namespace) -> int:
    specs = []
    for spec in args.files:
        if not (os.path.isdir(spec) or glob.has_magic(spec) or os.path.exists(spec)):
            raise CliError(f"{spec}: no such file or directory")
        specs.append(spec)
    idx = parquet.build_index(specs, args.column, args.error_rate, args.granularity,
                              output=args.output, dask=args.dask,
                              allow_outside=args.allow_outside)
    with idx:
        if not args.quiet:
            types = sorted({f.column_type.describe() for f in idx.files})
            print(f"indexed {len(idx.files)} file(s), {len(idx)} {_entries(idx)} of column "
                  f"{args.column!r} ({', '.join(types) or 'no file'}) into {args.output}: "
                  f"{os.path.getsize(args.output)} bytes")
    return 0


def _entries(idx: parquet.ParquetIndex) -> str:
    return "file filter(s)" if idx.granularity == "file" else "row group filter(s)"


@_keyerrors
def cmd_candidates(args: argparse.Namespace) -> int:
    with parquet.open_index(args.index, verify=not args.no_verify, max_bytes=_max_bytes(args),
                            allow_outside=args.allow_outside) as idx:
        if idx.files:
            col = idx.files[0].column_type
            values = [value_from_text(col, t) for t in args.values]
        else:
            values = list(args.values)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", parquet.StaleIndexWarning)
            try:
                res = idx.candidates(values, check=not args.no_check, strict=args.strict)
            except parquet.StaleIndexError as e:
                raise CliError(str(e), EXIT_STALE) from None
        for w in caught:
            print(f"bloomkit parquet candidates: warning: {w.message}", file=sys.stderr)
        hits = [res[value_key(v)] for v in values]
        if args.json:
            print(json.dumps({
                "index": args.index, "column": idx.column, "granularity": idx.granularity,
                "values": [{"value": t, "candidates": [[p, g] for p, g in h]}
                           for t, h in zip(args.values, hits, strict=True)],
                "stale": None if res.stale is None else res.stale.__dict__,
            }))
        else:
            for t, h in zip(args.values, hits, strict=True):
                print(f"{t}\t{' '.join(_where(p, g) for p, g in h) or '-'}")
    return 0 if all(hits) else 1


@_keyerrors
def cmd_update(args: argparse.Namespace) -> int:
    idx = parquet.open_index(args.index, max_bytes=_max_bytes(args),
                             allow_outside=args.allow_outside)
    new, what = idx.update()
    with new:
        if not args.quiet:
            print(f"updated {args.index}: {what.describe()}; {len(new.files)} file(s), "
                  f"{len(new)} {_entries(new)}")
    return 0


def _probe(args: argparse.Namespace) -> int:
    paths = _paths(args.files)
    with CountingFile(paths[0]) as f:  # the first file's schema types the values
        footer = read_footer(f)
        col = footer.columns[footer.column_index(args.column)]
    values = [value_from_text(col, t) for t in args.values]
    res = parquet.may_contain(paths, args.column, values, use_stats=not args.no_stats)
    hits = [res[value_key(v)] for v in values]
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


def index_info(path: str, header: dict[str, Any], verify: bool, max_bytes: int | None
               ) -> dict[str, Any]:
    """What ``bloomkit info`` prints of a Parquet index (kind 12): its
    column, granularity, files, entries and error rate, from the index alone
    (allow_outside: describing walks no path)."""
    st = os.stat(path)
    with parquet.open_index(path, verify=verify, max_bytes=max_bytes,
                            allow_outside=True) as idx:
        types = sorted({f.column_type.describe() for f in idx.files})
        return {
            "file": path,
            "kind": header["kind_name"],
            "kind_id": header["kind"],
            "format_version": f"{header['version_major']}.{header['version_minor']}",
            "file_bytes": st.st_size,
            "column": idx.column,
            "column_types": ", ".join(types) or "-",
            "granularity": idx.granularity,
            "files": len(idx.files),
            "entries": len(idx),
            "rows": sum(f.num_rows for f in idx.files),
            "distinct_values": sum(n for _, _, n in idx.entries),
            "error_rate": idx.error_rate,
            "seed": idx.seed,
            "patterns": ", ".join(os.path.relpath(p, os.path.dirname(path) or ".")
                                  for p in idx.patterns) or "-",
            "paths_outside_index_dir": idx.outside,
            "verified": verify,
        }
