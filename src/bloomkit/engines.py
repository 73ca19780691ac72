"""Membership inside query engines: a filter as a vectorized DuckDB function and
as a Polars expression (docs/engines.md).

Both hand the engine's own Arrow vectors to ``contains_many``, which reads them
through the Arrow C Data Interface (``__arrow_c_array__`` /
``__arrow_c_stream__``) without a Python object per key and without the GIL:
one Python call per vector of rows (DuckDB: 2,048 rows), not per row.  Keys
are the same keys as everywhere else (docs/keys.md): an integer column's 5 is
the Python int 5, a string column's ``"abc"`` the str ``"abc"``.  A null is no
key: the function answers False for it (DuckDB's default null handling makes
the result of a null input NULL, which a WHERE clause drops as well).

Any structure with ``contains_many`` works (every filter, the sketches answer
through their own methods).  DuckDB and Polars are imported only when called.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any

from . import _core

__all__ = ["duckdb_register", "polars_contains"]


def duckdb_register(con: Any, name: str, filt: Any, key_type: str = "BIGINT") -> None:
    """Register ``name(key) -> BOOLEAN`` on the DuckDB connection ``con``:
    ``filt.contains_many`` over each vector of rows, as Arrow.

    ``key_type`` is the DuckDB type of the argument: ``"BIGINT"`` (narrower
    integer columns are cast to it, which keeps the key: an INTEGER 5 is the
    key 5), ``"UBIGINT"``, ``"VARCHAR"`` or ``"BLOB"``.  Then
    ``SELECT count(*) FROM t WHERE name(uid)``.  The function is declared
    free of side effects, so DuckDB may run it in parallel threads (the
    hashing releases the GIL)."""
    pa = importlib.import_module("pyarrow")  # untyped: imported as a module object
    np = importlib.import_module("numpy")
    contains_many = filt.contains_many
    tables = _BoolTables(pa, np)
    if _core.contains_bits(filt, (), np.zeros(0, dtype=np.uint8)):
        # contains_many's answers bit-packed in C straight into the Table's
        # bitmap: no numpy result, no np.packbits and copy (1.5 us of a
        # vector's ~16 outside DuckDB, about 8% of WHERE seen(uid) inside)
        contains_bits = _core.contains_bits
        get = tables.get

        def seen(keys: Any) -> Any:
            bits, table = get(len(keys))
            contains_bits(filt, keys, bits)
            return table
    else:  # contains_many overridden in Python (or no bloomkit type): packed here

        def seen(keys: Any) -> Any:
            return tables.fill(contains_many(keys))

    con.create_function(name, seen, [key_type], "BOOLEAN", type="arrow")


class _BoolTables:
    """One-column boolean pyarrow Tables, one per thread and row count,
    refilled in place at each call.

    DuckDB calls the function once per vector (2,048 rows) and then turns
    what it returns into a Table (``Table.from_arrays``) and scans that into
    its own vector.  Returning a Table saves the first step, and filling the
    bitmap of the same Table again saves building a numpy array, a pyarrow
    array and a Table per vector: together about a quarter of the time of
    ``WHERE seen(uid)`` on one thread (benchmarks/engines.py).  The reuse is
    invisible: DuckDB copies an Arrow boolean column into its own one-byte
    bools before the call that received the Table returns (the bit-packed
    layout cannot be referenced in place), and the next call on the same
    thread is the only one that writes that Table's bits again.  Other
    threads have their own Tables (DuckDB runs the function on several
    threads at once).  The answers go into the bitmap from C
    (``_core.contains_bits``) or, for a ``contains_many`` of Python's, by
    ``fill``.  tests/test_engines.py checks every row's answer against
    ``contains_many`` on one and two threads, on both paths."""

    def __init__(self, pa: Any, np: Any) -> None:
        self._pa, self._np = pa, np
        # By thread id, not threading.local: DuckDB's worker threads are not
        # Python threads, and the thread state a call runs in (with the
        # thread-local data) is made and dropped around each call.
        self._by_thread: dict[int, dict[int, tuple[Any, Any]]] = {}

    def get(self, n: int) -> tuple[Any, Any]:
        """This thread's (bitmap, Table) of n rows: the bitmap is the
        Table's, ceil(n / 8) bytes, LSB first."""
        mine = self._by_thread.get(threading.get_ident())
        if mine is None:
            mine = self._by_thread[threading.get_ident()] = {}
        entry = mine.get(n)
        if entry is None:
            if len(mine) >= 4:  # a vector, a last partial vector, a few others
                mine.clear()
            pa, np = self._pa, self._np
            bits = np.zeros((n + 7) // 8, dtype=np.uint8)
            col = pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(bits)])
            entry = mine[n] = (bits, pa.Table.from_arrays([col], names=["c0"]))
        return entry

    def fill(self, answers: Any) -> Any:
        """The Table of len(answers) rows holding these answers."""
        np = self._np
        bits, table = self.get(len(answers))
        bits[:] = np.packbits(np.asarray(answers, dtype=np.bool_), bitorder="little")
        return table


def polars_contains(filt: Any, column: Any) -> Any:
    """A Polars boolean expression: is each value of ``column`` (a name or an
    expression) in ``filt``?  ``df.filter(polars_contains(f, "uid"))``; null
    values answer False.  The Series of each batch goes to
    ``filt.contains_many`` through the Arrow C stream interface."""
    pl = importlib.import_module("polars")
    expr = pl.col(column) if isinstance(column, str) else column
    contains_many = filt.contains_many

    def member(s: Any) -> Any:
        return pl.Series(s.name, contains_many(s), dtype=pl.Boolean)

    return expr.map_batches(member, return_dtype=pl.Boolean, is_elementwise=True)
