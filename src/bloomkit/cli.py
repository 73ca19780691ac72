"""The ``bloomkit`` command line (also ``python -m bloomkit``).

Every error is one line on stderr and a non-zero exit status, never a
traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .errors import BloomkitError


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run

    rows = run(n=args.n, error_rate=args.p)
    return 0 if all(r["false_negatives"] == 0 for r in rows) else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bloomkit", description="Build, query and inspect bloomkit filters."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("demo", help="build a 1M-key filter, round-trip it, measure its FPR")
    p.add_argument("-n", type=int, default=1_000_000, help="number of keys (default 1000000)")
    p.add_argument("-p", type=float, default=0.01, help="target error rate (default 0.01)")
    p.set_defaults(func=_cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except (BloomkitError, ValueError, TypeError, OSError) as exc:
        print(f"bloomkit {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"bloomkit {args.command}: interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
