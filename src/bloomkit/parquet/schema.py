"""A Parquet footer's schema: its leaf columns, read and checked one
SchemaElement at a time (bloomkit.parquet.footer calls this).

The schema is a depth-first list of SchemaElements: element 0 is the root
group, a group states its number of children, a leaf its physical type.
:func:`read_schema` walks it with an explicit stack (hostile nesting never
touches Python's recursion) and returns :class:`Columns`, which keeps per
leaf only the offset of its SchemaElement in the footer's bytes and its
parent group (8 bytes, where the smallest leaf a footer can state takes 5
bytes and its ColumnType about 280): a ColumnType is built when asked for,
and kept while the kept ones cost under twice the footer's size.  So a
footer of a million 5-byte leaves costs about its size, not 47 times it
(R50), and honest footers keep every column built, as before.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any, overload

from .thrift import (
    KIND_BIN,
    KIND_BOOL,
    KIND_INT,
    MAX_DEPTH,
    T_LIST,
    T_SET,
    T_STRUCT,
    Reader,
    Spec,
    Union,
)
from .values import ColumnType

__all__ = ["MAX_SCHEMA_DEPTH", "Columns", "checked_int", "read_schema"]

_TIME = Spec("TimeType", {1: ("isAdjustedToUTC", KIND_BOOL), 2: ("unit", Union("TimeUnit", {}))})
_LOGICAL = Union("LogicalType", {
    5: Spec("DecimalType", {1: ("scale", KIND_INT), 2: ("precision", KIND_INT)}),
    7: _TIME, 8: _TIME,
    10: Spec("IntType", {1: ("bitWidth", KIND_INT), 2: ("isSigned", KIND_BOOL)})})
_SCHEMA_EL = Spec("SchemaElement", {
    1: ("type", KIND_INT), 2: ("type_length", KIND_INT), 4: ("name", KIND_BIN),
    5: ("num_children", KIND_INT), 6: ("converted_type", KIND_INT), 7: ("scale", KIND_INT),
    8: ("precision", KIND_INT), 10: ("logicalType", _LOGICAL)})

# Schema groups nest at most this deep: every leaf's path is a tuple as
# long as its depth, so a chain of nested groups cost the square of the
# footer's size in paths (118 MiB for 30 KB).  Real schemas nest a few
# levels (a list of maps of structs is 5); Thrift's own limit is the same.
MAX_SCHEMA_DEPTH = MAX_DEPTH
# Bytes of one built ColumnType with a short path (tracemalloc: 280).
_COLUMN_COST = 320


def checked_int(v: Any, what: str, lo: int = 0, hi: int = (1 << 63) - 1) -> int:
    """``v`` when it is an int in [lo, hi], else ValueError naming ``what``."""
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise ValueError(f"{what} is {v!r}")
    return v


class Columns(Sequence[ColumnType]):
    """A footer's leaf columns, in schema order, built from its bytes when
    asked for (see the module's docstring).  Every leaf was checked when
    the footer was read; building it again gives an equal ColumnType."""

    __slots__ = ("_cache", "_cap", "_group_at", "_group_parent", "_leaf_at", "_leaf_parent",
                 "_raw")

    def __init__(self, raw: bytes) -> None:
        self._raw = raw
        self._leaf_at, self._leaf_parent = array("I"), array("i")
        self._group_at, self._group_parent = array("I"), array("i")
        self._cache: dict[int, ColumnType] = {}
        self._cap = max(64, 2 * len(raw) // _COLUMN_COST)

    def __len__(self) -> int:
        return len(self._leaf_at)

    @overload
    def __getitem__(self, i: int) -> ColumnType: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[ColumnType]: ...

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("column index out of range")
        col = self._cache.get(i)
        if col is None:
            el = Reader(self._raw, self._leaf_at[i]).struct(_SCHEMA_EL, 3)
            col = self._keep(i, ColumnType.from_schema(_schema_dict(el), self.path(i, el[2])))
        return col

    def _keep(self, i: int, col: ColumnType) -> ColumnType:
        if len(self._cache) < self._cap:
            self._cache[i] = col
        return col

    def path(self, i: int, name: bytes | None = None) -> tuple[str, ...]:
        """The names from the root's child down to leaf ``i``."""
        if name is None:
            name = Reader(self._raw, self._leaf_at[i]).struct(_SCHEMA_EL, 3)[2]
        names = [name]
        g = self._leaf_parent[i]
        while g >= 0:
            names.append(Reader(self._raw, self._group_at[g]).struct(_SCHEMA_EL, 3)[2])
            g = self._group_parent[g]
        return tuple(n.decode("utf-8", "replace") for n in reversed(names))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(list(self))


def read_schema(r: Reader, t: int) -> Columns:
    """The leaf columns of the schema list (wire type ``t``) at ``r``,
    checked one element at a time; ValueError says what is wrong."""
    if t not in (T_LIST, T_SET):
        raise ValueError("schema is missing or not a list of elements")
    n, et = r.list_header(2)
    if not n or et != T_STRUCT:
        raise ValueError("schema is missing or not a list of elements")
    root = r.struct(_SCHEMA_EL, 3)
    root_children = checked_int(root[3] if root[3] is not None else 0, "root num_children", 0, n)
    cols = Columns(r.buf)
    # (group index or -1 for the root, its path, children left)
    stack: list[tuple[int, tuple[str, ...], int]] = [(-1, (), root_children)]
    i = 1
    while stack:
        group, prefix, remaining = stack[-1]
        if remaining == 0:
            stack.pop()
            continue
        stack[-1] = (group, prefix, remaining - 1)
        if i >= n:
            raise ValueError("schema declares more children than elements")
        at = r.pos
        el = r.struct(_SCHEMA_EL, 3)
        i += 1
        pt, _, name, nch, _, _, _, _ = el
        if name is None:
            raise ValueError(f"schema element {i - 1} has no name")
        path = (*prefix, name.decode("utf-8", "replace"))
        if nch is not None and pt is None:
            if len(stack) >= MAX_SCHEMA_DEPTH:
                raise ValueError(f"schema groups nested deeper than {MAX_SCHEMA_DEPTH}")
            cols._group_at.append(at)
            cols._group_parent.append(group)
            stack.append((len(cols._group_at) - 1, path,
                          checked_int(nch, "num_children", 0, n)))
        else:
            col = ColumnType.from_schema(_schema_dict(el), path)  # checked here, kept if cheap
            cols._leaf_at.append(at)
            cols._leaf_parent.append(group)
            cols._keep(len(cols._leaf_at) - 1, col)
    if i != n:
        raise ValueError(f"schema has {n - i} elements outside the tree")
    return cols


def _schema_dict(el: tuple[Any, ...]) -> dict[int, Any]:
    """A leaf SchemaElement as ColumnType.from_schema reads it (field id:
    value, the LogicalType union as {member id: {field id: value}})."""
    pt, tl, _, _, ct, scale, prec, lt = el
    d = {fid: v for fid, v in ((1, pt), (2, tl), (6, ct), (7, scale), (8, prec)) if v is not None}
    if lt is not None and lt[3]:
        member, _, body, _ = lt
        inner: dict[int, Any] = {}
        if body is not None:
            for k, v in enumerate(body, 1):
                if isinstance(v, tuple):  # a TimeUnit union: {unit id: {}}
                    v = {v[0]: {}} if v[3] else {}
                if v is not None:
                    inner[k] = v
        d[10] = {member: inner}
    return d
