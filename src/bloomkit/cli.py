"""The ``bloomkit`` command line (also ``python -m bloomkit``).  See docs/cli.md.

Every error is one line on stderr and a non-zero exit status, never a
traceback.  Exit statuses:

  0  success (``query``: every key present)
  1  ``query``: at least one key absent
  2  usage error, missing file, bad numbers, any other error
  3  corrupt file (bad structure or checksum)
  4  unsupported file (newer format version, unknown structure kind)
  5  unclean file (marked open for writing: a writer is active or crashed)
  6  incompatible filters (``merge``)

Key input (cli_io.py): one key per line (the line's bytes without the line ending;
blank lines are skipped), from files or ``-`` for stdin; gzip input is
recognised by its magic number.  A key given on the command line is its
UTF-8 bytes, which hashes like the same ``str`` in Python.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Iterable, Sequence
from typing import Any, NoReturn

from . import _core, persist
from .cli_io import CliError, Progress, chunks, command_keys, count_lines, read_keys
from .errors import (
    BloomkitError,
    FormatError,
    IncompatibleFiltersError,
    UncleanFileError,
    UnsupportedFormatError,
)

EXIT_OK = 0
EXIT_ABSENT = 1
EXIT_ERROR = 2
EXIT_CORRUPT = 3
EXIT_UNSUPPORTED = 4
EXIT_UNCLEAN = 5
EXIT_INCOMPATIBLE = 6


# ---- Begin logic for the subcommands --------------------------------------


def _positive_int(text: str) -> int:
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


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be strictly between 0 and 1: {text!r}")
    return value


def _kind_class(args: argparse.Namespace) -> type[Any]:
    from .bloom import BlockedBloomFilter, BloomFilter

    if getattr(args, "kind", None):
        for cls in persist._KINDS.values():
            if cls.__name__.lower() == args.kind.lower():
                return cls
        names = ", ".join(sorted(c.__name__ for c in persist._KINDS.values()))
        raise CliError(f"unknown --kind {args.kind!r} (known: {names})")
    return BlockedBloomFilter if args.layout == "blocked" else BloomFilter


def _cmd_design(args: argparse.Namespace) -> int:
    from .design import design

    rows: list[dict[str, Any]] = []
    for layout in ("classic", "blocked"):
        d = design(args.n, args.p, layout)
        rows.append({
            "layout": layout, "capacity": d.capacity, "error_rate": d.error_rate,
            "num_bits": d.num_bits, "num_hashes": d.num_hashes, "num_blocks": d.num_blocks,
            "bytes": d.nbytes, "bits_per_key": d.bits_per_key,
            "expected_error_rate": d.expected_error_rate,
        })
    if args.json:
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    print(f"{args.n:,} keys at p={args.p:g}")
    print(f"{'layout':8} {'m (bits)':>16} {'k':>3} {'size':>12} {'bits/key':>9} {'model FPR':>10}")
    for r in rows:
        print(f"{r['layout']:8} {r['num_bits']:>16,} {r['num_hashes']:>3} "
              f"{_human(r['bytes']):>12} {r['bits_per_key']:>9.2f} "
              f"{r['expected_error_rate']:>10.4%}")
    return EXIT_OK


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def _cmd_build(args: argparse.Namespace) -> int:
    cls = _kind_class(args)
    if "-" in args.keys and args.keys.count("-") > 1:
        raise CliError("stdin ('-') can be given only once")
    keys_iter: Iterable[bytes]
    total: int | None = None
    if args.capacity is None:
        if "-" in args.keys:
            buffered = list(read_keys(args.keys))  # stdin can be read once: keep it
            keys_iter, total = buffered, len(buffered)
        else:
            total = count_lines(args.keys)
            keys_iter = read_keys(args.keys)
        capacity = max(1, total)
    else:
        capacity = args.capacity
        keys_iter = read_keys(args.keys)
    kwargs: dict[str, Any] = {"seed": args.seed}
    f = cls(capacity, args.p, **kwargs)
    bar = Progress(total, args.progress, "build")
    try:
        for chunk in chunks(keys_iter):
            f.add_many(chunk)
            bar.update(len(chunk))
    finally:
        bar.close()
    persist.save(f, args.output)
    return EXIT_OK


def _open_checked(path: str, mode: str, verify: bool) -> Any:
    return persist.open(path, mode, verify=verify)


def _cmd_add(args: argparse.Namespace) -> int:
    given = command_keys(args.keys)
    f = _open_checked(args.file, "r+", not args.no_verify)
    try:
        added = 0
        total = 0
        source: Iterable[bytes] = given if given is not None else read_keys(["-"])
        bar = Progress(None, args.progress, "add")
        try:
            for chunk in chunks(source):
                added += f.add_many(chunk)
                total += len(chunk)
                bar.update(len(chunk))
        finally:
            bar.close()
    finally:
        persist.close(f)
    if args.verbose:
        print(f"{total} keys, {added} new", file=sys.stderr)
    return EXIT_OK


def _cmd_query(args: argparse.Namespace) -> int:
    given = command_keys(args.keys)
    f = _open_checked(args.file, "r", not args.no_verify)
    out = sys.stdout.buffer
    all_present = True
    try:
        source: Iterable[bytes] = given if given is not None else read_keys(["-"])
        for chunk in chunks(source, 4096):
            for key, hit in zip(chunk, f.contains_many(chunk), strict=True):
                all_present = all_present and bool(hit)
                if args.quiet:
                    continue
                if args.hits:
                    if hit:
                        out.write(key + b"\n")
                elif args.misses:
                    if not hit:
                        out.write(key + b"\n")
                else:
                    out.write(key + (b"\tyes\n" if hit else b"\tno\n"))
    finally:
        persist.close(f)
        out.flush()
    return EXIT_OK if all_present else EXIT_ABSENT


_INFO_ATTRS = ("layout", "capacity", "error_rate", "num_bits", "num_hashes", "num_blocks",
               "seed", "keyed", "bits_set", "fill_ratio", "nbytes", "state_nbytes")


def _info(path: str, f: Any, header: dict[str, Any]) -> dict[str, Any]:
    info: dict[str, Any] = {
        "file": path,
        "kind": header["kind_name"],
        "kind_id": header["kind"],
        "format_version": f"{header['version_major']}.{header['version_minor']}",
        "file_bytes": os.path.getsize(path),
        "dirty": bool(header["flags"] & persist.FLAG_DIRTY),
        "hash": {1: "xxh3-64", 2: "siphash-2-4 (keyed)"}.get(header["hash_alg"], "unknown"),
    }
    for name in _INFO_ATTRS:
        if hasattr(f, name):
            info[name] = getattr(f, name)
    try:
        info["count"] = len(f)
    except TypeError:
        pass
    for name, meth in (("estimated_count", "estimate_count"),
                       ("estimated_error_rate", "estimate_error_rate")):
        fn = getattr(f, meth, None)
        if callable(fn):
            value = float(fn())
            info[name] = value if math.isfinite(value) else None
    return info


def _cmd_info(args: argparse.Namespace) -> int:
    f = _open_checked(args.file, "r", not args.no_verify)
    try:
        # the file's own header (to_bytes() would clear DIRTY)
        with open(args.file, "rb") as fh:
            header = _core.peek_header(fh.read(64), os.path.getsize(args.file))
        info = _info(args.file, f, header)
    finally:
        persist.close(f)
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        width = max(len(k) for k in info)
        for k, v in info.items():
            if isinstance(v, float):
                v = f"{v:.6g}"
            print(f"{k:<{width}}  {v}")
    return EXIT_OK


def _cmd_verify(args: argparse.Namespace) -> int:
    header = persist.verify(args.file)
    if not args.quiet:
        print(f"{args.file}: ok ({header['kind_name']}, format "
              f"{header['version_major']}.{header['version_minor']}, checksum "
              f"{header['checksum']:016x})")
    return EXIT_OK


def _cmd_merge(args: argparse.Namespace) -> int:
    filters = [persist.load(p) for p in args.inputs]
    first = filters[0]
    op = "intersection" if args.intersection else "union"
    fn = getattr(first, op, None)
    if not callable(fn):
        raise CliError(f"{type(first).__name__} does not support {op}")
    for p, f in zip(args.inputs[1:], filters[1:], strict=True):
        if type(f) is not type(first):
            raise CliError(f"cannot merge {type(first).__name__} ({args.inputs[0]}) with "
                           f"{type(f).__name__} ({p})", EXIT_INCOMPATIBLE)
    merged = fn(*filters[1:])
    persist.save(merged, args.output)
    return EXIT_OK


def _cmd_plot(args: argparse.Namespace) -> int:
    import random

    from .bloom import BlockedBloomFilter, BloomFilter

    if args.file:
        f = persist.load(args.file)
        label = os.path.basename(args.file)
        if not hasattr(f, "num_bits"):
            raise CliError(f"plot needs a Bloom filter, not a {type(f).__name__}")
    else:
        cls = BlockedBloomFilter if args.layout == "blocked" else BloomFilter
        f = cls(args.n, args.p, seed=1)
        f.add_many(range(args.n))
        label = f"fresh {cls.__name__}, n={args.n:,}"
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise CliError("plot needs matplotlib: pip install 'bloomkit[plot]'") from None
    count = max(1, len(f))
    bits_per_key = f.num_bits / count
    rng = random.Random(12345)
    probes = [rng.getrandbits(120).to_bytes(15, "little") for _ in range(args.probes)]
    measured = sum(f.contains_many(probes)) / len(probes)

    fig, ax = plt.subplots(figsize=(7, 4.5))
    hi = max(24.0, bits_per_key * 1.2)
    xs = [0.5 + i * (hi - 0.5) / 400 for i in range(401)]
    for k in (1, 2, 3, 4, 6, 8, 11, 16):
        ax.plot(xs, [(1 - math.exp(-k / b)) ** k for b in xs], lw=1, label=f"k={k}")
    ax.plot(xs, [0.5 ** (b * math.log(2)) for b in xs], "k--", lw=1, label="optimal k")
    ax.scatter([bits_per_key], [max(measured, 1.0 / len(probes))], color="red", zorder=5,
               label=f"{label}: measured {measured:.3%} (k={f.num_hashes})")
    ax.set_yscale("log")
    ax.set_ylim(1e-6, 1)
    ax.set_xlabel("bits per key")
    ax.set_ylabel("false-positive rate")
    ax.set_title("Bloom filter false-positive rate")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    plt.close(fig)
    return EXIT_OK


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run

    rows = run(n=args.n, error_rate=args.p)
    return 0 if all(r["false_negatives"] == 0 for r in rows) else 1


# ---- End logic for the subcommands ----------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage dump)."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see --help)", file=sys.stderr)
        sys.exit(EXIT_ERROR)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="bloomkit", description="Build, query and inspect bloomkit filters.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=_Parser)

    p = sub.add_parser("design", help="print m, k, size and bits/key for both layouts")
    p.add_argument("-n", type=_positive_int, required=True, help="number of keys")
    p.add_argument("-p", type=_rate, default=0.01, help="target error rate (default 0.01)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_design)

    def progress_flags(q: argparse.ArgumentParser) -> None:
        g = q.add_mutually_exclusive_group()
        g.add_argument("--progress", dest="progress", action="store_const", const=True,
                       default=None, help="progress bar on stderr (default: when a terminal)")
        g.add_argument("--no-progress", dest="progress", action="store_const", const=False)

    def no_verify(q: argparse.ArgumentParser) -> None:
        q.add_argument("--no-verify", action="store_true",
                       help="skip the checksum check when opening (O(1) open)")

    p = sub.add_parser("build", help="build a filter from key files (one key per line)")
    p.add_argument("keys", nargs="+", metavar="KEYS", help="key files, '-' for stdin; gzip ok")
    p.add_argument("-o", "--output", required=True, help="output file (written atomically)")
    p.add_argument("--capacity", type=_positive_int, help="design capacity (default: line count)")
    p.add_argument("-p", type=_rate, default=0.01, help="target error rate (default 0.01)")
    p.add_argument("--layout", choices=("classic", "blocked"), default="classic")
    p.add_argument("--kind", help="any registered structure class name (overrides --layout)")
    p.add_argument("--seed", type=int, default=0, help="hash seed (default 0)")
    progress_flags(p)
    p.set_defaults(func=_cmd_build)

    p = sub.add_parser("add", help="add keys to a filter file in place")
    p.add_argument("file")
    p.add_argument("keys", nargs="+", metavar="KEYS", help="keys, or '-' to read them from stdin")
    p.add_argument("-v", "--verbose", action="store_true", help="print how many were new")
    no_verify(p)
    progress_flags(p)
    p.set_defaults(func=_cmd_add)

    p = sub.add_parser("query", help="test keys; exit 0 only if all are present")
    p.add_argument("file")
    p.add_argument("keys", nargs="+", metavar="KEYS", help="keys, or '-' to read them from stdin")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--hits", action="store_true", help="print only the keys present")
    g.add_argument("--misses", action="store_true", help="print only the keys absent")
    g.add_argument("-q", "--quiet", action="store_true", help="print nothing; exit status only")
    no_verify(p)
    p.set_defaults(func=_cmd_query)

    p = sub.add_parser("info", help="parameters, fill, estimated count and FPR, size")
    p.add_argument("file")
    p.add_argument("--json", action="store_true")
    no_verify(p)
    p.set_defaults(func=_cmd_info)

    p = sub.add_parser("verify", help="check the checksum and structure (exit 3/4/5 on failure)")
    p.add_argument("file")
    p.add_argument("-q", "--quiet", action="store_true")
    p.set_defaults(func=_cmd_verify)

    p = sub.add_parser("merge", help="union (or intersection) of compatible filters")
    p.add_argument("inputs", nargs="+", metavar="FILE")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--intersection", action="store_true", help="AND instead of OR")
    p.set_defaults(func=_cmd_merge)

    p = sub.add_parser("plot", help="PNG of FPR against bits/key, with a measured point")
    p.add_argument("file", nargs="?", help="a filter to place on the plot (default: a fresh one)")
    p.add_argument("-o", "--output", required=True, help="PNG file")
    p.add_argument("-n", type=_positive_int, default=100_000, help="keys of a fresh filter")
    p.add_argument("-p", type=_rate, default=0.01, help="rate of a fresh filter")
    p.add_argument("--layout", choices=("classic", "blocked"), default="classic")
    p.add_argument("--probes", type=_positive_int, default=200_000, help="absent keys probed")
    p.set_defaults(func=_cmd_plot)

    p = sub.add_parser("demo", help="build a 1M-key filter, round-trip it, measure its FPR")
    p.add_argument("-n", type=_positive_int, default=1_000_000, help="number of keys")
    p.add_argument("-p", type=_rate, default=0.01, help="target error rate (default 0.01)")
    p.set_defaults(func=_cmd_demo)
    return parser


def _exit_code(exc: BaseException) -> int:
    if isinstance(exc, CliError):
        return exc.code
    if isinstance(exc, UncleanFileError):
        return EXIT_UNCLEAN
    if isinstance(exc, UnsupportedFormatError):
        return EXIT_UNSUPPORTED
    if isinstance(exc, FormatError):
        return EXIT_CORRUPT
    if isinstance(exc, IncompatibleFiltersError):
        return EXIT_INCOMPATIBLE
    return EXIT_ERROR


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror}"
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except KeyboardInterrupt:
        print(f"bloomkit {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (`bloomkit query ... | head`): not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except (CliError, BloomkitError, ValueError, TypeError, OSError, MemoryError) as exc:
        print(f"bloomkit {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return _exit_code(exc)
    except Exception as exc:  # a bug: still one line, never a traceback
        print(f"bloomkit {args.command}: internal error: {type(exc).__name__}: {_one_line(exc)}",
              file=sys.stderr)
        return EXIT_ERROR
    return code


if __name__ == "__main__":
    sys.exit(main())
