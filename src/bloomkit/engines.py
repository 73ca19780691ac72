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
from typing import Any

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
    contains_many = filt.contains_many

    def seen(keys: Any) -> Any:
        return pa.array(contains_many(keys), type=pa.bool_())

    con.create_function(name, seen, [key_type], "BOOLEAN", type="arrow")


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
