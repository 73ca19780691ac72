"""Keys typed on the command line, read in the key domain of the filter
(issue #31 item 1; docs/cli.md, "Key types").

The one key encoding hashes the int ``5207496`` and the text ``"5207496"`` as
two different keys, and a filter built from a Parquet/CSV integer column or
an int ``.npy`` holds ints.  A file records the key types it was built with
(``obj.key_types``, bloomkit/_domains.py), so ``query`` and ``add`` read each
key (argument, ``--from`` line, stdin line) as the filter holds them:

    int          a key that parses as an integer (as written: ``0123`` is
                 123; ``0x``/``0o``/``0b`` prefixes; the Parquet probe's
                 parser) is the int; any other key is looked up as text with
                 a warning (it cannot be one of the filter's keys)
    text, none   as text (the key's UTF-8 bytes), as always
    mixed        a key that parses as an integer is looked up both ways
                 (present if either is); others as text
    unknown      (files written before the record, states from Redis) as
                 text, as always, with one note on stderr when a key looks
                 like an integer

``--as-int`` (every key an integer; one that is not is an error) and
``--as-text`` (every key as text, no note) override the record.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from .._domains import describe, parse_int
from .errors import CliError

_SHOWN = 3  # "not an integer" warnings printed in full; the rest are counted


class KeyReader:
    """Turns the raw keys of one ``query``/``add`` run into lookups."""

    def __init__(self, key_types: frozenset[str] | None, as_int: bool, as_text: bool,
                 command: str, path: str) -> None:
        self.command, self.path, self.key_types = command, path, key_types
        if as_int:
            self.mode = "as-int"
        elif as_text or (key_types is not None and "int" not in key_types):
            self.mode = "text"
        elif key_types is None:
            self.mode = "unknown"
        else:
            self.mode = "int" if key_types == {"int"} else "mixed"
        self.not_int = 0  # int mode: keys that were no integer
        self.noted = False

    def _say(self, what: str, text: str) -> None:
        print(f"bloomkit {self.command}: {what}: {self.path}: {text}", file=sys.stderr)

    def _int(self, key: bytes) -> int | None:
        try:
            return parse_int(key.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return None

    def lookups(self, chunk: list[bytes]) -> tuple[list[object], list[tuple[int, int]]]:
        """The keys to look up for ``chunk`` (one each, in order) and, in
        mixed mode, extra int lookups as (index in chunk, int)."""
        if self.mode == "text":
            return list(chunk), []
        out: list[object] = []
        extra: list[tuple[int, int]] = []
        for i, key in enumerate(chunk):
            value = self._int(key)
            if self.mode == "as-int":
                if value is None:
                    raise CliError(f"--as-int: {_show(key)} is not an integer")
                out.append(value)
            elif self.mode == "int":
                if value is None:
                    self._not_an_int(key)
                    out.append(key)
                else:
                    out.append(value)
            else:
                out.append(key)
                if value is not None:
                    if self.mode == "mixed":
                        extra.append((i, value))
                    elif not self.noted:
                        self.noted = True
                        self._say("note", "the file does not record its key types (written "
                                  "before bloomkit did, or from Redis), so keys are read as "
                                  f"text: {_show(key)} is the text, not the int; if the file "
                                  "was built from integers (a Parquet/CSV int column, an int "
                                  ".npy), pass --as-int")
        return out, extra

    def _not_an_int(self, key: bytes) -> None:
        self.not_int += 1
        if self.not_int <= _SHOWN:
            self._say("warning", f"{_show(key)} is not an integer, and the file holds only "
                      f"int keys (keys: {describe(self.key_types)}): read as text, it cannot "
                      "be one of them (--as-text to read every key as text)")

    def answers(self, chunk: list[bytes],
                answer: Callable[[list[object]], list[int]]) -> list[int]:
        """``answer`` over the lookups of ``chunk``: one value per key (mixed
        mode: the larger of its text and int answers)."""
        keys, extra = self.lookups(chunk)
        values = answer(keys)
        if extra:
            more = answer([v for _, v in extra])
            for (i, _), v in zip(extra, more, strict=True):
                values[i] = max(values[i], v)
        return values

    def finish(self) -> None:
        """The count of "not an integer" warnings not printed in full."""
        if self.not_int > _SHOWN:
            self._say("warning", f"{self.not_int - _SHOWN} more keys were not integers "
                      "(read as text)")


def _show(key: bytes) -> str:
    text = key.decode("utf-8", "backslashreplace")
    return repr(text if len(text) <= 40 else text[:37] + "...")
