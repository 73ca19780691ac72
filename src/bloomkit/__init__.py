"""bloomkit: fast, correct, portable approximate membership for Python.

Membership: :class:`BloomFilter` (classic), :class:`BlockedBloomFilter` (one
cache line per key), :class:`QuotientFilter` (mergeable, resizable multiset
of fingerprints).  Frequency: :class:`CountMinSketch`, :class:`TopK`,
:class:`TinyLFU` and :mod:`bloomkit.cache`.  The two-stage check:
:class:`Guard`.  Sizing: :func:`design`, :func:`false_positive_rate`.  One
file format: :func:`dumps`, :func:`loads`, :func:`save`, :func:`load`.
Errors: :mod:`bloomkit.errors`.
"""

from __future__ import annotations

from . import _core
from . import cache as cache
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
from .guard import AsyncGuard, Guard, GuardStats, OverfullFilterWarning
from .persist import dumps, load, loads, register_kind, save
from .quotient import KIND_QUOTIENT, QuotientFilter
from .sketch import KIND_COUNT_MIN, KIND_TINYLFU, CountMinSketch, TinyLFU, TopK

register_kind(KIND_BLOOM, BloomFilter)
register_kind(KIND_BLOCKED_BLOOM, BlockedBloomFilter)
register_kind(KIND_QUOTIENT, QuotientFilter)
register_kind(KIND_COUNT_MIN, CountMinSketch)
register_kind(KIND_TINYLFU, TinyLFU)

key_hash = _core.key_hash

__version__ = "0.1.0"

__all__ = [
    "AsyncGuard",
    "BlockedBloomFilter",
    "BloomFilter",
    "BloomkitError",
    "CapacityError",
    "ChecksumError",
    "CountMinSketch",
    "Design",
    "FormatError",
    "Guard",
    "GuardStats",
    "IncompatibleFiltersError",
    "OverfullFilterWarning",
    "QuotientFilter",
    "TinyLFU",
    "TopK",
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
