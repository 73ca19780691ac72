"""Exit statuses and one-line errors of the ``bloomkit`` command line.

Every error is one line on stderr and a non-zero exit status, never a
traceback; an error about a file starts with its name.  The statuses are
listed in ``--help`` (parser.EXIT_HELP) and docs/cli.md.
"""

from __future__ import annotations

from ..errors import (
    FormatError,
    IncompatibleFiltersError,
    SizeLimitError,
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


class CliError(Exception):
    """An error the command line reports as one line (exit status ``code``)."""

    def __init__(self, message: str, code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.code = code


def exit_code(exc: BaseException) -> int:
    if isinstance(exc, CliError):
        return exc.code
    if isinstance(exc, SizeLimitError):  # refused for its size, not known to be corrupt
        return EXIT_ERROR
    if isinstance(exc, UncleanFileError):
        return EXIT_UNCLEAN
    if isinstance(exc, UnsupportedFormatError):
        return EXIT_UNSUPPORTED
    if isinstance(exc, FormatError):
        return EXIT_CORRUPT
    if isinstance(exc, IncompatibleFiltersError):
        return EXIT_INCOMPATIBLE
    return EXIT_ERROR


def one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror}"
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, MemoryError) and text == "MemoryError":
        text = "out of memory (an allocation failed); free memory or use a smaller filter"
    return text
