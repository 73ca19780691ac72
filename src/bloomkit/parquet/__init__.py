"""Parquet's own Bloom filters and a sidecar index over a lake (``bloomkit.parquet``).

The package's parts, each readable alone:

- ``sbbf``: the split-block Bloom filter facade (:class:`SplitBlockBloomFilter`),
  ``read_filter``, ``row_group_filters`` and ``may_contain`` over files;
- ``index``: the sidecar index (container kind 12: ``build_index``, ``open_index``);
- ``footer``: reading a file's footer, column chunks and Bloom filter headers;
- ``schema``: the footer's schema, its leaf columns built on access;
- ``thrift``: the Thrift compact protocol those are written in;
- ``values``: column types (:class:`ColumnType`) and the PLAIN encoding of values;
- ``cli``: the ``bloomkit parquet probe/index/candidates`` commands.

Usage and guarantees: docs/parquet.md.
"""

from __future__ import annotations

from .index import (
    IndexCandidates,
    IndexedFile,
    ParquetIndex,
    StaleIndexError,
    StaleIndexWarning,
    Staleness,
    build_index,
    open_index,
)
from .sbbf import (
    Candidates,
    SplitBlockBloomFilter,
    may_contain,
    optimal_num_bytes,
    read_filter,
    row_group_filters,
)
from .values import ColumnType

__all__ = [
    "Candidates",
    "ColumnType",
    "IndexCandidates",
    "IndexedFile",
    "ParquetIndex",
    "SplitBlockBloomFilter",
    "StaleIndexError",
    "StaleIndexWarning",
    "Staleness",
    "build_index",
    "may_contain",
    "open_index",
    "optimal_num_bytes",
    "read_filter",
    "row_group_filters",
]
