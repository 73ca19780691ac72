"""The secret of a keyed filter on the command line (issue #31 item 2).

A keyed filter (``secret=``, SipHash-2-4) cannot be opened without its
16-byte secret, and the secret is never stored in the file.  The command
line takes it from places that do not show it in the process list
(``ps`` shows every argument of every process to every user):

- ``--secret-file FILE``: the file holds the 16 raw bytes (``head -c 16
  /dev/urandom > team.key``) or 32 hex digits (surrounding white space,
  a trailing newline included, is ignored);
- the environment variable ``BLOOMKIT_SECRET``: 32 hex digits.  It is used
  only for files that are keyed (an exported secret does not break
  commands on plain files), and ``build`` makes a keyed filter from it
  only with ``--keyed``.

``--secret-file`` given for a plain file is an error, as ``secret=`` given to
a plain filter is in Python.  A wrong secret is refused by the file's key
check ("wrong secret for this keyed filter"): no command ever answers with a
wrong secret.
"""

from __future__ import annotations

import argparse
import binascii
import os
from typing import Any

from .. import _core
from ..errors import BloomkitError
from .errors import CliError

ENV = "BLOOMKIT_SECRET"
SECRET_BYTES = 16
FLAG_KEYED = 0x0002  # header flags bit 1 (bk_format.h BK_FLAG_KEYED)
HINT = (f"pass its secret with --secret-file FILE (16 raw bytes or 32 hex digits) or "
        f"{ENV}=<32 hex digits>")


def add_options(p: argparse.ArgumentParser, build: bool = False) -> None:
    """``--secret-file`` (and, for build, ``--keyed``) on a subcommand."""
    what = ("make a keyed filter (SipHash-2-4) with the secret in FILE" if build else
            "the secret of a keyed filter")
    p.add_argument("--secret-file", metavar="FILE",
                   help=f"{what}: 16 raw bytes or 32 hex digits (never a command-line "
                        f"argument: ps shows those); else ${ENV} is used for keyed files")
    if build:
        p.add_argument("--keyed", action="store_true",
                       help=f"make a keyed filter with the secret in ${ENV} (32 hex digits)")


def _parse(raw: bytes, where: str) -> bytes:
    if len(raw) == SECRET_BYTES:
        return raw
    text = raw.strip()
    if len(text) == 2 * SECRET_BYTES:
        try:
            return binascii.unhexlify(text)
        except (binascii.Error, ValueError):
            pass
    raise CliError(f"{where}: a secret is 16 raw bytes or 32 hex digits, not "
                   f"{len(raw)} bytes")


def read_secret_file(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(4 * SECRET_BYTES + 1)  # a secret is short: read no more
    except OSError as exc:
        raise CliError(f"{path}: cannot read the secret: {exc.strerror or exc}") from exc
    return _parse(raw, path)


def _from_env() -> bytes | None:
    value = os.environ.get(ENV)
    if value is None or value == "":
        return None
    return _parse(value.encode("ascii", "replace"), f"${ENV}")


def for_build(args: argparse.Namespace) -> bytes | None:
    """The secret a new filter is keyed with, or None for a plain one."""
    if getattr(args, "secret_file", None):
        return read_secret_file(args.secret_file)
    if getattr(args, "keyed", False):
        secret = _from_env()
        if secret is None:
            raise CliError(f"--keyed needs a secret: --secret-file FILE or {ENV}=<32 hex digits>")
        return secret
    return None


def is_keyed(path: str) -> bool | None:
    """Whether the filter file at ``path`` is keyed; None when its header
    cannot say (opening it then reports why)."""
    try:
        with open(path, "rb") as fh:
            header: dict[str, Any] = _core.peek_header(fh.read(64), os.fstat(fh.fileno()).st_size)
    except (BloomkitError, ValueError, OSError):
        return None
    return bool(header["flags"] & FLAG_KEYED)


def for_file(args: argparse.Namespace, path: str) -> bytes | None:
    """The secret to open ``path`` with: --secret-file (always passed on, so
    that a plain file refuses it), else $BLOOMKIT_SECRET for a keyed file.
    A keyed file without either is a one-line error that says how."""
    if getattr(args, "secret_file", None):
        return read_secret_file(args.secret_file)
    keyed = is_keyed(path)
    if not keyed:
        return None
    secret = _from_env()
    if secret is None:
        raise CliError(f"{path}: this filter is keyed (SipHash): {HINT}")
    return secret


def secret_missing(args: argparse.Namespace, path: str) -> bool:
    """Whether ``path`` is keyed and no secret was given for it."""
    if getattr(args, "secret_file", None):
        return False
    return bool(is_keyed(path)) and not os.environ.get(ENV)
