"""Shared batch plumbing of :mod:`bloomkit.spark` and :mod:`bloomkit.guava`.

The filters live in a ``bytearray`` holding the JVM's own serialized bytes
(``BloomFilter.writeTo``, ``CountMinSketch.writeTo``); the C core
(``bk_jvm.c``) validates, queries and updates them in place.  A batch goes to
C as columns: an int64 buffer, or Arrow's offsets + data, with Arrow's
validity bitmap (a null is skipped on add and answers False / 0), hashed
without the GIL; any other iterable goes key by key.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from . import _core
from ._batch import check_keys

SPARK, GUAVA, CMS = 0, 1, 2

#: Key rules of ``_core.jvm_bloom_key``: Spark's type dispatch, then Guava's funnels.
RULE_SPARK, RULE_LONG, RULE_STRING, RULE_BYTES = 0, 1, 2, 3


def _np() -> Any:
    import numpy as np

    return np


def _arrow_module(obj: Any) -> Any | None:
    """pyarrow, if obj is an Arrow array or chunked array (without importing it otherwise)."""
    mod = type(obj).__module__
    if not mod.startswith("pyarrow"):
        return None
    import importlib

    pa = importlib.import_module("pyarrow")
    return pa if isinstance(obj, (pa.Array, pa.ChunkedArray)) else None


class Column:
    """One columnar batch ready for ``_core.jvm_batch``."""

    __slots__ = ("data", "n", "offsets", "owidth", "valid", "vals", "vbit")

    def __init__(self, n: int, vals: Any = None, offsets: Any = None, owidth: int = 0,
                 data: Any = None, valid: Any = None, vbit: int = 0) -> None:
        self.n, self.vals, self.offsets, self.owidth = n, vals, offsets, owidth
        self.data, self.valid, self.vbit = data, valid, vbit

    def run(self, buf: bytearray, family: int, out: Any = None, counts: Any = None) -> None:
        _core.jvm_batch(buf, family, self.vals, self.offsets, self.owidth, self.data, self.n,
                        self.valid, self.vbit, out, counts)


def _int64(arr: Any) -> Any:
    """A C-contiguous native int64 view or copy of an integer numpy array."""
    np = _np()
    big = arr.dtype.kind == "u" and arr.dtype.itemsize == 8
    if big and arr.size and int(arr.max()) > 2**63 - 1:
        raise OverflowError("an int key must fit a Java long (-2**63 .. 2**63-1)")
    return np.ascontiguousarray(arr, dtype=np.int64)


def _arrow_columns(arr: Any, pa: Any, rule: int, what: str) -> Iterator[Column]:
    np = _np()
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    types = pa.types
    for a in chunks:
        t = a.type
        if types.is_dictionary(t):
            a = a.dictionary_decode()
            t = a.type
        if hasattr(types, "is_string_view") and (types.is_string_view(t) or
                                                   types.is_binary_view(t)):
            a = a.cast(pa.large_string() if types.is_string_view(t) else pa.large_binary())
            t = a.type
        n = len(a)
        bufs = a.buffers()
        valid = bufs[0] if a.null_count else None
        if types.is_integer(t):
            if rule not in (RULE_SPARK, RULE_LONG):
                raise TypeError(f"{what} takes no integer keys (Arrow {t})")
            if t != pa.int64():
                a = a.cast(pa.int64())  # checked: values that do not fit raise
                bufs = a.buffers()
                valid = bufs[0] if a.null_count else None
            vals = np.frombuffer(bufs[1], dtype=np.int64, count=a.offset + n)[a.offset:]
            yield Column(n, vals=vals, valid=valid, vbit=a.offset)
        elif types.is_string(t) or types.is_large_string(t) or types.is_binary(t) or \
                types.is_large_binary(t):
            is_str = types.is_string(t) or types.is_large_string(t)
            if rule == RULE_LONG or (rule == RULE_STRING and not is_str) or \
                    (rule == RULE_BYTES and is_str):
                raise TypeError(f"{what} takes no {t} keys")
            wide = types.is_large_string(t) or types.is_large_binary(t)
            dt = np.int64 if wide else np.int32
            offsets = np.frombuffer(bufs[1], dtype=dt, count=n + 1,
                                    offset=a.offset * np.dtype(dt).itemsize) if n else \
                np.zeros(1, dtype=dt)
            data = bufs[2] if bufs[2] is not None else b""
            yield Column(n, offsets=offsets, owidth=8 if wide else 4, data=data, valid=valid,
                         vbit=a.offset)
        else:
            raise TypeError(f"{what} takes integer, string or binary Arrow arrays, not {t}")


def columns(keys: Any, rule: int, what: str) -> Iterator[Column] | None:
    """The columnar batches of keys, or None: go key by key."""
    if hasattr(keys, "to_arrow") and type(keys).__module__.startswith("polars"):
        keys = keys.to_arrow()
    pa = _arrow_module(keys)
    if pa is not None:
        return _arrow_columns(keys, pa, rule, what)
    if type(keys).__module__ == "numpy" and hasattr(keys, "dtype") and keys.dtype.kind in "iu":
        if rule not in (RULE_SPARK, RULE_LONG):
            raise TypeError(f"{what} takes no integer keys")
        vals = _int64(keys.reshape(-1))
        return iter([Column(len(vals), vals=vals)])
    return None


def key_list(keys: Iterable[Any]) -> list[Any] | tuple[Any, ...]:
    check_keys(keys)
    if hasattr(keys, "tolist") and not isinstance(keys, (list, tuple)):
        return list(keys.tolist())
    return keys if isinstance(keys, (list, tuple)) else list(keys)


def answers(parts: list[Any], total: int) -> Any:
    """The 0/1 answers as a numpy bool array (a list of bools without numpy)."""
    try:
        np = _np()
    except ImportError:
        return [bool(x) for p in parts for x in bytes(p)]
    if not parts:
        return np.zeros(0, dtype=bool)
    out = np.concatenate([np.frombuffer(p, dtype=np.uint8) for p in parts])
    assert len(out) == total
    return out.view(bool)


def bloom_add_many(buf: bytearray, family: int, rule: int, keys: Any, what: str) -> None:
    cols = columns(keys, rule, what)
    if cols is None:
        _core.jvm_bloom_keys(buf, family, rule, key_list(keys), True)
        return
    for c in cols:
        c.run(buf, family)


def bloom_contains_many(buf: bytearray, family: int, rule: int, keys: Any, what: str) -> Any:
    cols = columns(keys, rule, what)
    if cols is None:
        got = _core.jvm_bloom_keys(buf, family, rule, key_list(keys), False)
        assert got is not None
        return answers([got], len(got))
    parts = []
    total = 0
    for c in cols:
        out = bytearray(c.n)
        c.run(buf, family, out=out)
        parts.append(out)
        total += c.n
    return answers(parts, total)


def java_round(x: float) -> int:
    """Java's Math.round for the non-negative doubles used here: floor(x + 0.5)."""
    import math

    return math.floor(x + 0.5)
