"""bloomkit: fast, correct, portable approximate membership for Python.

Structures: :class:`BloomFilter` (classic) and :class:`BlockedBloomFilter`
(one cache line per key).  Sizing: :func:`design`,
:func:`false_positive_rate`.  One file format: :func:`dumps`, :func:`loads`,
:func:`save`, :func:`load`.  Errors: :mod:`bloomkit.errors`.
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
from .persist import dumps, load, loads, register_kind, save
from .sketch import KIND_COUNT_MIN, KIND_TINYLFU, CountMinSketch, TinyLFU, TopK

register_kind(KIND_BLOOM, BloomFilter)
register_kind(KIND_BLOCKED_BLOOM, BlockedBloomFilter)
register_kind(KIND_COUNT_MIN, CountMinSketch)
register_kind(KIND_TINYLFU, TinyLFU)

key_hash = _core.key_hash

__version__ = "0.1.0"

__all__ = [
    "BlockedBloomFilter",
    "BloomFilter",
    "BloomkitError",
    "CapacityError",
    "ChecksumError",
    "CountMinSketch",
    "Design",
    "FormatError",
    "IncompatibleFiltersError",
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
