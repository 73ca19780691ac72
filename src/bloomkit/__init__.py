"""bloomkit: fast, correct, portable approximate membership for Python.

Membership: :class:`BloomFilter` (classic), :class:`BlockedBloomFilter` (one
cache line per key), :class:`CountingBloomFilter` (with remove),
:class:`ScalableBloomFilter` (grows without a known capacity),
:class:`QuotientFilter` (mergeable, resizable multiset of fingerprints),
:class:`CuckooFilter` (deletion, small at low error rates),
:class:`BinaryFuseFilter` (static set built once: smallest, no add),
:class:`SlidingBloomFilter` (the last n adds or the last t seconds).
Frequency: :class:`CountMinSketch`, :class:`TopK`, :class:`TinyLFU` and
:mod:`bloomkit.cache`.  The two-stage check: :class:`Guard`.  Sizing:
:func:`design`, :func:`false_positive_rate`.  One file format: :func:`dumps`,
:func:`loads`, :func:`save`, :func:`load`; memory-mapped files: :func:`open`,
:func:`create`, :func:`flush`, :func:`close`, :func:`verify`,
:func:`repair`.  Data files (text lines, .npy, Parquet, CSV):
:func:`build_from`.  Errors:
:mod:`bloomkit.errors`.
"""

from __future__ import annotations

try:
    from . import _core
except ImportError as _exc:  # a source tree without the compiled extension?
    import glob as _glob
    import os as _os

    if _glob.glob(_os.path.join(__path__[0], "_core.*[!i]")):  # built, but broken: say so
        raise
    raise ImportError(
        f"bloomkit's C extension bloomkit._core is not built in {__path__[0]}: "
        "install the package (`pip install .`) and run without PYTHONPATH=src, or build "
        "it in place with `python setup.py build_ext --inplace` (docs/building.md)"
    ) from _exc
from . import cache as cache
from ._typing import Key
from .bloom import KIND_BLOCKED_BLOOM, KIND_BLOOM, BlockedBloomFilter, BloomFilter
from .counting import KIND_COUNTING_BLOOM, CountingBloomFilter
from .cuckoo import KIND_CUCKOO, CuckooFilter, cuckoo_design
from .design import Design, design, false_positive_rate
from .errors import (
    BloomkitError,
    CapacityError,
    ChecksumError,
    ColumnNotFoundError,
    FileInUseError,
    FormatError,
    IncompatibleFiltersError,
    SizeLimitError,
    UncleanFileError,
    UnsupportedFormatError,
)
from .fuse import KIND_BINARY_FUSE, BinaryFuseFilter
from .growable import KIND_GROWABLE, GrowableFilter
from .guard import AsyncGuard, Guard, GuardStats, OverfullFilterWarning
from .persist import (
    close,
    create,
    dumps,
    flush,
    load,
    loads,
    open,
    register_kind,
    repair,
    save,
    verify,
)
from .quotient import KIND_QUOTIENT, QuotientFilter
from .scalable import KIND_SCALABLE_BLOOM, ScalableBloomFilter
from .sketch import KIND_COUNT_MIN, KIND_TINYLFU, CountMinSketch, TinyLFU
from .sliding import KIND_SLIDING_BLOOM, SlidingBloomFilter, SlidingWindowWarning
from .sources import build_from
from .sources.base import key_lines as lines
from .topk import TopK

# The one list of kinds is the table of kind descriptors in C (_core.KINDS:
# class name -> Kind, bk_kinds.c); every class exported here under one of
# its names is registered for load/loads/open (the Parquet index has its own
# reader, bloomkit.parquet).
for _name, _kind in _core.KINDS.items():
    if _name in globals():
        register_kind(_kind.id, globals()[_name])
del _name, _kind

key_hash = _core.key_hash

__version__ = "0.1.0"

__all__ = [
    "KIND_BINARY_FUSE",
    "KIND_BLOCKED_BLOOM",
    "KIND_BLOOM",
    "KIND_COUNTING_BLOOM",
    "KIND_COUNT_MIN",
    "KIND_CUCKOO",
    "KIND_GROWABLE",
    "KIND_QUOTIENT",
    "KIND_SCALABLE_BLOOM",
    "KIND_SLIDING_BLOOM",
    "KIND_TINYLFU",
    "AsyncGuard",
    "BinaryFuseFilter",
    "BlockedBloomFilter",
    "BloomFilter",
    "BloomkitError",
    "CapacityError",
    "ChecksumError",
    "ColumnNotFoundError",
    "CountMinSketch",
    "CountingBloomFilter",
    "CuckooFilter",
    "Design",
    "FileInUseError",
    "FormatError",
    "GrowableFilter",
    "Guard",
    "GuardStats",
    "IncompatibleFiltersError",
    "Key",
    "OverfullFilterWarning",
    "QuotientFilter",
    "ScalableBloomFilter",
    "SizeLimitError",
    "SlidingBloomFilter",
    "SlidingWindowWarning",
    "TinyLFU",
    "TopK",
    "UncleanFileError",
    "UnsupportedFormatError",
    "__version__",
    "build_from",
    "close",
    "create",
    "cuckoo_design",
    "design",
    "dumps",
    "false_positive_rate",
    "flush",
    "key_hash",
    "lines",
    "load",
    "loads",
    "open",
    "register_kind",
    "repair",
    "save",
    "verify",
]
