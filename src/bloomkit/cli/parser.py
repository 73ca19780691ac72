"""The ``bloomkit`` command line's parser: argument types, help texts with
the exit statuses and one example per command, and ``build_parser``, which
wires each subcommand to its function in commands.py (the Parquet commands
register themselves: bloomkit/parquet/cli.py)."""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any, NoReturn

from .. import sources
from . import commands, keyed, registry
from . import kinds as cli_kinds
from .errors import EXIT_ERROR


def positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", ""), 0)
    except ValueError:
        try:
            f = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not f.is_integer():
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        value = int(f)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be strictly between 0 and 1: {text!r}")
    return value


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0.0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0: {text!r}")
    return value


SIZE_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40, "p": 2**50}


def byte_size(text: str) -> int:
    """``64G``, ``1.5T``, ``1e12``, ``500MiB``, ``0``: binary units."""
    m = re.fullmatch(r"([0-9][0-9_]*(?:\.[0-9]*)?(?:e[0-9]+)?)\s*([kmgtp]?)(?:i?b)?",
                     text.strip().lower())
    if m is None:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 64G, 1T, 0)")
    return int(float(m.group(1).replace("_", "")) * SIZE_UNITS[m.group(2)])


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage dump) and help texts whose
    epilogs (exit statuses, examples) keep their line breaks."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see --help)", file=sys.stderr)
        sys.exit(EXIT_ERROR)


EXIT_HELP = """exit statuses:
  0  success (query: every key present)
  1  query: at least one key absent
  2  usage error, missing file, bad number, file over --max-bytes, any other error
  3  corrupt file (lengths, structure or checksum)
  4  unsupported file (newer format version, unknown kind)
  5  file in use (a writer has it open; add --wait ran out) or unclean (a
     writer was killed: bloomkit repair FILE); parquet candidates --strict:
     the lake changed since the index was built
  6  incompatible filters (merge)"""


# one example per command, shown by `bloomkit --help` and `bloomkit CMD --help`
EXAMPLES = {
    "design": "bloomkit design -n 50000000 -p 0.01",
    "build": "zcat leaked.txt.gz | bloomkit build - -o leaked.bkf -p 1e-4",
    "add": "bloomkit add seen.bkf --from new_urls.txt",
    "query": "bloomkit query leaked.bkf hunter2 correcthorse; echo $?",
    "info": "bloomkit info week.bkf --json",
    "verify": 'bloomkit verify week.bkf || echo "status $?"',
    "repair": "bloomkit repair seen.bkf   # after a writer was killed (exit 5: unclean)",
    "merge": "bloomkit merge day1.bkf day2.bkf -o week.bkf   # built with one --capacity and -p",
    "plot": "bloomkit plot week.bkf -o week.png",
    "demo": "bloomkit demo -n 100000",
    "kinds": "bloomkit kinds --json   # every kind: id, class, page, traits, limits, parameters",
}


def _version() -> str:
    from .. import __version__

    return f"bloomkit {__version__}"


def build_parser() -> argparse.ArgumentParser:
    examples = "\n".join(f"  {v}" for v in EXAMPLES.values())
    parser = Parser(prog="bloomkit", description="Build, query and inspect bloomkit filters.",
                     epilog=f"examples:\n{examples}\n\n{EXIT_HELP}\n\nSee docs/cli.md.")
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=Parser)

    def command(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=help,
                              epilog=f"example:\n  {EXAMPLES[name]}\n\n{EXIT_HELP}")

    p = command("design", "print m, k, size and bits/key for both layouts")
    p.add_argument("-n", type=positive_int, required=True, help="number of keys")
    p.add_argument("-p", type=rate, default=0.01, help="target error rate (default 0.01)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_design)

    def progress_flags(q: argparse.ArgumentParser) -> None:
        g = q.add_mutually_exclusive_group()
        g.add_argument("--progress", dest="progress", action="store_const", const=True,
                       default=None, help="progress bar on stderr (default: when a terminal)")
        g.add_argument("--no-progress", dest="progress", action="store_const", const=False)

    def no_verify(q: argparse.ArgumentParser) -> None:
        q.add_argument("--no-verify", action="store_true",
                       help="skip the checksum check when opening (O(1) open)")

    def max_bytes(q: argparse.ArgumentParser) -> None:
        q.add_argument("--max-bytes", type=byte_size, default=None, metavar="SIZE",
                       help="refuse files larger than SIZE before a full pass (default 16G; "
                            "suffixes K M G T; 0: no limit)")

    def key_args(q: argparse.ArgumentParser) -> None:
        q.add_argument("keys", nargs="*", metavar="KEYS",
                       help="keys (UTF-8), or a lone '-' to read them from stdin; read in the "
                       "key types the file records (an int filter: integers as written)")
        q.add_argument("--from", dest="from_files", action="append", default=[],
                       metavar="FILE", help="also read keys from FILE, one per line ('-' is "
                       "stdin; gzip ok; repeatable)")
        t = q.add_mutually_exclusive_group()
        t.add_argument("--as-int", action="store_true",
                       help="read every key as an integer (decimal as written, 0x/0o/0b "
                       "prefixes), whatever the file records; a key that is not one is an error")
        t.add_argument("--as-text", action="store_true",
                       help="read every key as text (its UTF-8 bytes), whatever the file "
                       "records")

    kinds = cli_kinds.kind_names()
    p = command("build", "build a filter from key files (one key per line), .npy arrays, "
                "Parquet or CSV columns")
    p.add_argument("keys", nargs="+", metavar="FILE",
                   help="key files or globs ('data/*.parquet'): text lines (gzip ok; '-' is "
                   "stdin), .npy, .parquet, .csv/.tsv (by name; see --format)")
    p.add_argument("-o", "--output", required=True, help="output file (written atomically)")
    p.add_argument("--capacity", type=positive_int,
                   help="design capacity (default: the number of keys: Parquet/.npy "
                   "metadata, else a counting pass; files to be merged need one --capacity; "
                   "CountMinSketch, BinaryFuseFilter: none)")
    p.add_argument("-p", type=rate, default=None,
                   help=f"target error rate (default {cli_kinds.DEFAULT_RATE}); "
                   "CountMinSketch: epsilon; TinyLFU: none; BinaryFuseFilter: picks the "
                   "smallest fingerprint (8, 16, 32 bits) with 2^-f <= p (default 8 bits)")
    p.add_argument("--layout", choices=("classic", "blocked"), default="blocked",
                   help="blocked: BlockedBloomFilter, one cache line per key (default); "
                   "classic: BloomFilter, a little smaller, textbook math")
    p.add_argument("--kind", type=cli_kinds.parse_kind, choices=kinds, metavar="KIND",
                   help=f"any structure, overrides --layout: {', '.join(kinds)} "
                   "(default: from --layout).  BinaryFuseFilter is static: it holds the "
                   "64-bit hash of every key in memory while building (8 bytes a key, plus "
                   "~15 bytes a key while it solves) and cannot be added to or merged")
    p.add_argument("--layout-version", type=int, choices=(0, 1), default=None,
                   help="blocked only: how a key's bits are placed in its block; 1 (default) "
                   "or 0, the layout of blocked files built before version 1, to merge with "
                   "them")
    p.add_argument("--delta", type=rate, default=None,
                   help=f"CountMinSketch only: failure probability (default "
                   f"{cli_kinds.DEFAULT_DELTA})")
    p.add_argument("--seed", type=int, default=0, help="hash seed (default 0)")
    p.add_argument("--column", metavar="NAME",
                   help="the Parquet/CSV column (or .npy field) holding the keys (needed when "
                   "a file has several)")
    p.add_argument("--format", choices=("auto", *sources.FORMATS), default=None,
                   help="read every FILE as this format (default auto: by file name)")
    p.add_argument("--delimiter", metavar="CHAR",
                   help="CSV field delimiter (default ',', tab for .tsv)")
    p.add_argument("--as-text", action="store_true",
                   help="CSV: read the column as text, without type inference (007 stays "
                   "the string '007'; the keys are then strs, as on the command line)")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    keyed.add_options(p, build=True)
    progress_flags(p)
    p.set_defaults(func=commands.cmd_build)

    p = command("add", "add keys to a filter file in place")
    p.add_argument("file")
    key_args(p)
    p.add_argument("-v", "--verbose", action="store_true", help="print how many were new")
    p.add_argument("--wait", type=seconds, default=None, metavar="SECONDS",
                   help="give up (exit 5) if another process still holds the writer lock "
                        "after SECONDS (default: wait; 0: do not wait)")
    no_verify(p)
    max_bytes(p)
    progress_flags(p)
    keyed.add_options(p)
    p.set_defaults(func=commands.cmd_add)

    p = command("query", "test keys; exit 0 only if all are present (sketches: print counts)")
    p.add_argument("file")
    key_args(p)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--hits", action="store_true", help="print only the keys present")
    g.add_argument("--misses", action="store_true", help="print only the keys absent")
    g.add_argument("-q", "--quiet", action="store_true", help="print nothing; exit status only")
    no_verify(p)
    max_bytes(p)
    keyed.add_options(p)
    p.set_defaults(func=commands.cmd_query)

    p = command("info", "parameters, fill, estimated count and FPR, size")
    p.add_argument("file")
    p.add_argument("--json", action="store_true")
    no_verify(p)
    max_bytes(p)
    keyed.add_options(p)
    p.set_defaults(func=commands.cmd_info)

    p = command("verify", "check the checksum and structure (exit 3/4/5 on failure)")
    p.add_argument("file")
    p.add_argument("-q", "--quiet", action="store_true")
    max_bytes(p)
    p.set_defaults(func=commands.cmd_verify)

    p = command("repair", "recount and reseal a file a killed writer left unclean")
    p.add_argument("file")
    p.add_argument("-q", "--quiet", action="store_true")
    max_bytes(p)
    keyed.add_options(p)
    p.set_defaults(func=commands.cmd_repair)

    p = command("merge", "union (or intersection) of compatible filters")
    p.add_argument("inputs", nargs="+", metavar="FILE")
    p.add_argument("-o", "--output", required=True, help="output file (written atomically)")
    p.add_argument("--intersection", action="store_true", help="AND instead of OR")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    keyed.add_options(p)
    p.set_defaults(func=commands.cmd_merge)

    p = command("plot", "PNG of FPR against bits/key, with a measured point")
    p.add_argument("file", nargs="?", help="a filter to place on the plot (default: a fresh one)")
    p.add_argument("-o", "--output", required=True, help="PNG file")
    p.add_argument("-n", type=positive_int, default=100_000, help="keys of a fresh filter")
    p.add_argument("-p", type=rate, default=0.01, help="rate of a fresh filter")
    p.add_argument("--layout", choices=("classic", "blocked"), default="blocked",
                   help="layout of a fresh filter (default blocked)")
    p.add_argument("--probes", type=positive_int, default=200_000, help="absent keys probed")
    p.set_defaults(func=commands.cmd_plot)

    p = command("demo", "build a 1M-key filter, round-trip it, measure its FPR")
    p.add_argument("-n", type=positive_int, default=1_000_000, help="number of keys")
    p.add_argument("-p", type=rate, default=0.01, help="target error rate (default 0.01)")
    p.set_defaults(func=commands.cmd_demo)

    p = command("kinds", "the kind registry: every structure kind this build holds, with its "
                "id, class, page, layout versions, traits, limits and header parameters")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=registry.cmd_kinds)

    # its own module: `bloomkit parquet probe/index/candidates`
    from ..parquet import cli as cli_parquet

    cli_parquet.register(sub, EXIT_HELP)
    return parser
