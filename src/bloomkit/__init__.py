"""bloomkit: fast, correct, portable approximate membership for Python.

Structures: :class:`BloomFilter` (classic) and :class:`BlockedBloomFilter`
(one cache line per key).  Sizing: :func:`design`,
:func:`false_positive_rate`.  One file format: :func:`dumps`, :func:`loads`,
:func:`save`, :func:`load`; memory-mapped files: :func:`open`,
:func:`create`, :func:`flush`, :func:`close`, :func:`verify`.  Errors: :mod:`bloomkit.errors`.
"""

from __future__ import annotations

from . import _core
from .bloom import KIND_BLOCKED_BLOOM, KIND_BLOOM, BlockedBloomFilter, BloomFilter
from .design import Design, design, false_positive_rate
from .errors import (
    BloomkitError,
    CapacityError,
    ChecksumError,
    FormatError,
    IncompatibleFiltersError,
    UncleanFileError,
    UnsupportedFormatError,
)
from .persist import close, create, dumps, flush, load, loads, open, register_kind, save, verify

register_kind(KIND_BLOOM, BloomFilter)
register_kind(KIND_BLOCKED_BLOOM, BlockedBloomFilter)

key_hash = _core.key_hash

__version__ = "0.1.0"

__all__ = [
    "BlockedBloomFilter",
    "BloomFilter",
    "BloomkitError",
    "CapacityError",
    "ChecksumError",
    "Design",
    "FormatError",
    "IncompatibleFiltersError",
    "UncleanFileError",
    "UnsupportedFormatError",
    "__version__",
    "close",
    "create",
    "design",
    "dumps",
    "false_positive_rate",
    "flush",
    "key_hash",
    "load",
    "loads",
    "open",
    "register_kind",
    "save",
    "verify",
]
