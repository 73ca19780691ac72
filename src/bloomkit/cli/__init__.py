"""The ``bloomkit`` command line (also ``python -m bloomkit``).  See docs/cli.md.

Every error is one line on stderr and a non-zero exit status, never a
traceback; an error about a file starts with its name.  Exit statuses
(also in ``--help``):

  0  success (``query``: every key present)
  1  ``query``: at least one key absent
  2  usage error, missing file, bad numbers, file over --max-bytes, any other error
  3  corrupt file (bad structure or checksum)
  4  unsupported file (newer format version, unknown structure kind)
  5  file in use (a writer has it open) or unclean (a writer was killed:
     ``bloomkit repair FILE``)
  6  incompatible filters (``merge``)

The package's parts: io.py reads keys (key files, ``--from``, stdin, gzip);
kinds.py decides what each structure kind does in build/add/query/merge;
commands.py holds the subcommands (registry.py ``kinds``); parser.py the argument parser; errors.py
the exit statuses and one-line messages; this module ``main``.  ``build``
makes a BlockedBloomFilter unless told otherwise (the README's first choice).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ..errors import BloomkitError
from .errors import (
    EXIT_ABSENT,
    EXIT_CORRUPT,
    EXIT_ERROR,
    EXIT_INCOMPATIBLE,
    EXIT_OK,
    EXIT_UNCLEAN,
    EXIT_UNSUPPORTED,
    CliError,
    exit_code,
    one_line,
)
from .parser import build_parser

__all__ = [
    "EXIT_ABSENT",
    "EXIT_CORRUPT",
    "EXIT_ERROR",
    "EXIT_INCOMPATIBLE",
    "EXIT_OK",
    "EXIT_UNCLEAN",
    "EXIT_UNSUPPORTED",
    "CliError",
    "build_parser",
    "main",
]


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """parse_args, except that ``add``/``query`` also take KEYS after an option
    (``query f.bkf --from a.txt k1``), which argparse leaves unparsed."""
    args, extra = parser.parse_known_args(argv)
    if extra and getattr(args, "command", None) in ("add", "query") and all(
            e == "-" or not e.startswith("-") for e in extra):
        args.keys = [*args.keys, *extra]
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = _parse(parser, argv)
    # `bloomkit parquet candidates: error: ...`: the subcommand names itself
    name = getattr(args, "command_name", None) or args.command
    try:
        code: int = args.func(args)
    except KeyboardInterrupt:
        print(f"bloomkit {name}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (`bloomkit query ... | head`): not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except (CliError, BloomkitError, ValueError, TypeError, OSError, MemoryError) as exc:
        print(f"bloomkit {name}: error: {one_line(exc)}", file=sys.stderr)
        return exit_code(exc)
    except Exception as exc:  # a bug: still one line, never a traceback
        print(f"bloomkit {name}: internal error: {type(exc).__name__}: {one_line(exc)}",
              file=sys.stderr)
        return EXIT_ERROR
    return code
