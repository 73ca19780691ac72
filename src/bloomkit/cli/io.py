"""Key input for the ``bloomkit`` command line: key files, stdin, gzip, chunks,
and the optional progress bar.  See docs/cli.md ("Keys").  The data files of
``build`` (.npy, Parquet, CSV, globs) are read by bloomkit/sources/, which also
reads the text lines these functions read.

One key per line: the line's bytes without the line ending (``\n`` or
``\r\n``); blank lines are skipped; ``-`` is stdin; gzip input is recognised
by its magic number, whatever the file is called.  A key given on the
command line is its UTF-8 bytes, which hashes like the same ``str`` in
Python.
"""

from __future__ import annotations

import gzip
import importlib
import itertools
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ..sources.base import lines, open_input
from .errors import CliError

CHUNK = 65536  # keys per add_many call: large enough to amortise the call, small in memory


def read_keys(names: Sequence[str]) -> Iterator[bytes]:
    for name in names:
        stream = open_input(name)
        try:
            yield from lines(stream)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise CliError(f"{name}: cannot read keys: {exc}") from exc
        finally:
            if name != "-":
                stream.close()


def chunks(keys: Iterable[bytes], size: int = CHUNK) -> Iterator[list[bytes]]:
    chunk: list[bytes] = []
    for k in keys:
        chunk.append(k)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


# Binary data files that `--from` (text lines) would silently turn into
# garbage keys: refused by their magic number, whatever their name.
_DATA_MAGIC = ((b"\x93NUMPY", "a NumPy .npy array"), (b"PAR1", "a Parquet file"))


def _data_file(name: str) -> str | None:
    try:
        with open(name, "rb") as fh:
            head = fh.read(8)
    except OSError:
        return None  # read_keys reports it
    return next((what for magic, what in _DATA_MAGIC if head.startswith(magic)), None)


def key_sources(literal: Sequence[str], files: Sequence[str]) -> Iterator[bytes]:
    """The keys of ``add``/``query``: the KEYS arguments (a lone ``-`` means
    stdin), then the lines of every ``--from`` file (``-`` is stdin).  The
    arguments are checked now, before the caller opens its filter; the
    files are read lazily."""
    names = list(files)
    given = list(literal)
    if given == ["-"]:
        given, names = [], ["-", *names]
    if not given and not names:
        raise CliError("no keys: give KEYS, '-' (stdin) or --from FILE")
    if names.count("-") > 1:
        raise CliError("stdin ('-') can be given only once")
    for name in names:
        if name != "-" and os.path.isdir(name):
            raise CliError(f"--from {name}: is a directory")
        what = None if name == "-" else _data_file(name)
        if what is not None:
            raise CliError(
                f"--from {name}: {what}, not text lines (one key per line): `bloomkit build` "
                f"reads it as data (ints by value, a Parquet column); in Python, "
                f"bloomkit.sources.add_from(f, {name!r}) adds it to an open filter")
    return itertools.chain((k.encode("utf-8", "surrogateescape") for k in given),
                           read_keys(names))


def check_output(path: str) -> str:
    """Refuse an ``-o`` destination that cannot be written, before any work:
    a directory, or a file in a missing or read-only directory."""
    if os.path.isdir(path):
        raise CliError(f"-o {path}: is a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise CliError(f"-o {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CliError(f"-o {path}: directory {parent} is not writable")
    return path


class Progress:
    """A tqdm bar on stderr when asked for (or stderr is a terminal) and tqdm
    is installed (``pip install 'bloomkit[cli]'``); otherwise nothing.  It
    counts keys; with ``nbytes`` (the input's size) it also shows the bytes
    read (:meth:`show`)."""

    def __init__(self, total: int | None, enabled: bool | None, desc: str,
                 nbytes: int | None = None) -> None:
        self._bar: Any = None
        self._nbytes = nbytes
        show = sys.stderr.isatty() if enabled is None else enabled
        if not show:
            return
        try:
            tqdm = importlib.import_module("tqdm").tqdm
        except ImportError:
            if enabled:
                print("bloomkit: note: install tqdm (pip install 'bloomkit[cli]') for a "
                      "progress bar", file=sys.stderr)
            return
        self._bar = tqdm(total=total, unit="key", unit_scale=True, desc=desc, file=sys.stderr,
                         leave=False)

    def update(self, n: int) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def show(self, keys: int, nbytes: int) -> None:
        """Move to ``keys`` keys and ``nbytes`` bytes read so far."""
        if self._bar is None:
            return
        if self._nbytes:
            self._bar.set_postfix_str(f"{_mib(nbytes)}/{_mib(self._nbytes)} MiB", refresh=False)
        self._bar.update(keys - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _mib(n: int) -> str:
    return f"{n / 2**20:,.1f}"
