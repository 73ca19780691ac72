"""bloomkit: fast, correct, portable approximate membership for Python.

Structures: :class:`BloomFilter` (classic), :class:`BlockedBloomFilter`
(one cache line per key), :class:`CountingBloomFilter` (with remove) and
:class:`ScalableBloomFilter` (grows without a capacity).  Sizing: :func:`design`,
:func:`false_positive_rate`.  One file format: :func:`dumps`, :func:`loads`,
:func:`save`, :func:`load`.  Errors: :mod:`bloomkit.errors`.
"""

from __future__ import annotations

from . import _core
from .bloom import KIND_BLOCKED_BLOOM, KIND_BLOOM, BlockedBloomFilter, BloomFilter
from .counting import KIND_COUNTING_BLOOM, CountingBloomFilter
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
from .persist import dumps, load, loads, register_kind, save
from .scalable import KIND_SCALABLE_BLOOM, ScalableBloomFilter

register_kind(KIND_BLOOM, BloomFilter)
register_kind(KIND_BLOCKED_BLOOM, BlockedBloomFilter)
register_kind(KIND_COUNTING_BLOOM, CountingBloomFilter)
register_kind(KIND_SCALABLE_BLOOM, ScalableBloomFilter)

key_hash = _core.key_hash

__version__ = "0.1.0"

__all__ = [
    "BlockedBloomFilter",
    "BloomFilter",
    "BloomkitError",
    "CapacityError",
    "ChecksumError",
    "CountingBloomFilter",
    "Design",
    "FormatError",
    "IncompatibleFiltersError",
    "ScalableBloomFilter",
    "UncleanFileError",
    "UnsupportedFormatError",
    "__version__",
    "design",
    "dumps",
    "false_positive_rate",
    "key_hash",
    "load",
    "loads",
    "save",
]
