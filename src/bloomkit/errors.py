"""bloomkit's exceptions.

Every error that bad data or a bad combination of filters can cause is one
of these (or a plain ValueError/TypeError for bad arguments):

- :class:`FormatError` (a ValueError): the bytes are not a valid bloomkit
  state. Subclasses say why, so that tools can react differently:
  :class:`ChecksumError` (corruption), :class:`UnsupportedFormatError` (a
  newer major version or an unknown structure kind) and
  :class:`UncleanFileError` (a mapped file whose writer has not closed it;
  its :class:`FileInUseError`: a writer has the file open right now, or
  holds the writer lock a second writer waited for in vain) and
  :class:`SizeLimitError` (refused for its size before any work, not known
  to be corrupt).
- :class:`IncompatibleFiltersError` (a ValueError): a set operation between
  filters whose layout, size, number of hashes, seed or hashing differ.
- :class:`ColumnNotFoundError` (a KeyError and a ValueError): a data file
  without the column asked for.
- :class:`CapacityError`: a structure that cannot take another key (cuckoo
  and quotient filters when full); the structure is left unchanged.

One warning lives here too, :class:`SlidingWindowWarning` (re-exported by
bloomkit and bloomkit.sliding), so that the C core can raise it (py_sliding.c
imports it at module init like the exceptions above).
"""

from __future__ import annotations

__all__ = [
    "BloomkitError",
    "CapacityError",
    "ChecksumError",
    "ColumnNotFoundError",
    "FileInUseError",
    "FormatError",
    "IncompatibleFiltersError",
    "SizeLimitError",
    "SlidingWindowWarning",
    "UncleanFileError",
    "UnsupportedFormatError",
]


class BloomkitError(Exception):
    """Base class of every bloomkit exception."""


class FormatError(BloomkitError, ValueError):
    """The data is not a valid bloomkit state (truncated, corrupt, malformed)."""


class ChecksumError(FormatError):
    """The checksum over header and payload does not match: the data is corrupt."""


class UnsupportedFormatError(FormatError):
    """A valid container this version cannot read (newer major version, unknown kind)."""


class UncleanFileError(FormatError):
    """A mapped file still marked open for writing (its writer is active or crashed)."""


class SizeLimitError(FormatError):
    """Refused before any work: over ``max_bytes``, or a sparse file declaring far
    more than is on disk (docs/FORMAT.md, "Size limits").  Not known to be corrupt:
    pass a larger ``max_bytes`` to accept it."""


class FileInUseError(UncleanFileError):
    """A live writer has the file open: its state is in use, not corrupt.

    Raised by ``verify``/``load``/``open(..., verify=True)`` of a file a
    writer is using, by ``open(path, "r+", timeout=...)`` when the writer
    lock did not come free in time, and by ``save``/``create`` asked to
    replace a file that writers have open (see docs/FORMAT.md, "Writers").
    """


class ColumnNotFoundError(BloomkitError, KeyError, ValueError):
    """A data file (Parquet, CSV) has no column of the name asked for.

    One type for one condition across the API (issue #31): ``may_contain``,
    ``build_index``, ``read_filter`` and ``build_from`` all raise it.  It is
    a KeyError (what ``may_contain`` and ``build_index`` raised) and a
    ValueError (what ``build_from`` raised), so either ``except`` still
    catches it; its message is the plain text (no KeyError quotes)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "no such column"


class IncompatibleFiltersError(BloomkitError, ValueError):
    """Filters that differ in layout, size, hashes, seed or hashing cannot be combined."""


class CapacityError(BloomkitError, RuntimeError):
    """The structure is full; it was left exactly as it was."""


class SlidingWindowWarning(UserWarning):
    """A time-mode filter shifted early: more than capacity / l adds arrived
    within one generation (window / l seconds), so keys are kept for less
    than ``window`` seconds."""
