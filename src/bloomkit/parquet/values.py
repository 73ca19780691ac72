"""Parquet column types and the PLAIN encoding of Python values (bloomkit.parquet).

A Parquet split-block Bloom filter hashes the PLAIN encoding of the *stored*
(physical) value, so probing needs the column's schema: ``5`` probed against
an INT32 column hashes 4 bytes, against an INT64 column 8, against a DOUBLE
column the 8 bytes of ``5.0``; a ``datetime.date`` against a DATE column
hashes its INT32 day count; a ``Decimal("1.25")`` against DECIMAL(9, 2)
hashes the INT32 125.  :class:`ColumnType` holds what the footer's schema
says about one leaf column and turns values into those bytes
(:meth:`ColumnType.encode`) and into keys ordered like the column's
statistics (:meth:`ColumnType.order_key`).

``encode`` returns ``None`` for a value of a supported Python type that the
column cannot hold (an int outside INT32, a decimal with more fractional
digits than the scale, bytes of the wrong FIXED_LEN_BYTE_ARRAY length): such
a value is in no row group.  A value of an unsupported type raises
:class:`TypeError` saying what the column takes.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import struct
import uuid
from dataclasses import dataclass
from typing import Any

from .._domains import parse_int

__all__ = ["PHYSICAL_TYPES", "ColumnType"]

PHYSICAL_TYPES = {
    0: "BOOLEAN",
    1: "INT32",
    2: "INT64",
    3: "INT96",
    4: "FLOAT",
    5: "DOUBLE",
    6: "BYTE_ARRAY",
    7: "FIXED_LEN_BYTE_ARRAY",
}
_PHYSICAL_IDS = {v: k for k, v in PHYSICAL_TYPES.items()}

# ConvertedType ids (parquet.thrift) that decide encoding or order.
_CT_UTF8, _CT_ENUM, _CT_DECIMAL, _CT_DATE = 0, 4, 5, 6
_CT_TIME_MILLIS, _CT_TIME_MICROS, _CT_TS_MILLIS, _CT_TS_MICROS = 7, 8, 9, 10
_CT_UINT = {11: 8, 12: 16, 13: 32, 14: 64}
_CT_INT = {15: 8, 16: 16, 17: 32, 18: 64}
_CT_JSON, _CT_BSON, _CT_INTERVAL = 19, 20, 21

_UNIT_PER_SECOND = {"MILLIS": 1_000, "MICROS": 1_000_000, "NANOS": 1_000_000_000}
_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_EPOCH_DATE = _dt.date(1970, 1, 1)

_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")
_F16 = struct.Struct("<e")


@dataclass(frozen=True)
class ColumnType:
    """What the Parquet schema says about one leaf column.

    ``physical`` is the physical type name (``"INT32"``, ``"INT64"``,
    ``"FLOAT"``, ``"DOUBLE"``, ``"BYTE_ARRAY"``, ``"FIXED_LEN_BYTE_ARRAY"``,
    also ``"BOOLEAN"`` and ``"INT96"`` which no Bloom filter covers);
    ``logical`` the logical type (``"STRING"``, ``"DATE"``, ``"TIMESTAMP"``,
    ``"TIME"``, ``"DECIMAL"``, ``"INTEGER"``, ``"UUID"``, ``"FLOAT16"``,
    ``"ENUM"``, ``"JSON"``, ``"BSON"``, ``"INTERVAL"`` ... or ``None``) with
    its parameters.  Build one by hand with :meth:`of`, or get it from a
    file's schema (``read_filter`` and ``may_contain`` do).
    """

    physical: str
    type_length: int | None = None
    logical: str | None = None
    unit: str | None = None  # TIMESTAMP / TIME: MILLIS, MICROS, NANOS
    utc: bool = True  # TIMESTAMP / TIME: isAdjustedToUTC
    scale: int = 0  # DECIMAL
    precision: int = 0  # DECIMAL
    bit_width: int = 0  # INTEGER
    signed: bool = True  # INTEGER
    path: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The column's dotted path (empty for a type built by hand)."""
        return ".".join(self.path)

    @classmethod
    def of(cls, spec: str | ColumnType, type_length: int | None = None) -> ColumnType:
        """A column type from a name: a physical type (``"INT32"``, ``"INT64"``,
        ``"FLOAT"``, ``"DOUBLE"``, ``"BYTE_ARRAY"``, ``"FIXED_LEN_BYTE_ARRAY"``
        with ``type_length``) or a common logical one (``"STRING"``,
        ``"DATE"``, ``"TIMESTAMP_MILLIS"``, ``"TIMESTAMP_MICROS"``,
        ``"TIMESTAMP_NANOS"``, ``"UUID"``)."""
        if isinstance(spec, ColumnType):
            return spec
        if not isinstance(spec, str):
            raise TypeError(f"a column type is a name or a ColumnType, not {type(spec).__name__}")
        s = spec.upper()
        if s in _PHYSICAL_IDS:
            if s == "FIXED_LEN_BYTE_ARRAY":
                if type_length is None or type_length <= 0:
                    raise ValueError("FIXED_LEN_BYTE_ARRAY needs a positive type_length")
                return cls(s, type_length=type_length)
            return cls(s)
        if s == "STRING":
            return cls("BYTE_ARRAY", logical="STRING")
        if s == "DATE":
            return cls("INT32", logical="DATE")
        if s.startswith("TIMESTAMP_") and s[10:] in _UNIT_PER_SECOND:
            return cls("INT64", logical="TIMESTAMP", unit=s[10:])
        if s == "UUID":
            return cls("FIXED_LEN_BYTE_ARRAY", type_length=16, logical="UUID")
        raise ValueError(
            f"unknown column type {spec!r}: use INT32, INT64, FLOAT, DOUBLE, BYTE_ARRAY, "
            "FIXED_LEN_BYTE_ARRAY, STRING, DATE, TIMESTAMP_MILLIS/MICROS/NANOS or UUID"
        )

    @classmethod
    def from_schema(cls, el: dict[int, Any], path: tuple[str, ...]) -> ColumnType:
        """From a SchemaElement decoded by bloomkit.parquet.thrift (leaf only).
        Raises ValueError (the caller names the file) on inconsistent fields."""
        pt = el.get(1)
        if not isinstance(pt, int) or pt not in PHYSICAL_TYPES:
            raise ValueError(f"unknown physical type {pt!r}")
        physical = PHYSICAL_TYPES[pt]
        tl = el.get(2)
        type_length = None
        if physical == "FIXED_LEN_BYTE_ARRAY":
            if not isinstance(tl, int) or tl <= 0:
                raise ValueError("FIXED_LEN_BYTE_ARRAY without a positive type_length")
            type_length = tl
        kw: dict[str, Any] = {}
        lt = el.get(10)
        ct = el.get(6)
        if isinstance(lt, dict) and lt:
            kw = _logical_from_union(lt)
        elif isinstance(ct, int):
            kw = _logical_from_converted(ct, el)
        if kw.get("logical") == "DECIMAL":
            scale, prec = kw.get("scale", 0), kw.get("precision", 0)
            if not (isinstance(scale, int) and isinstance(prec, int) and 0 <= scale <= 1000):
                raise ValueError("DECIMAL with an invalid scale")
        return cls(physical, type_length=type_length, path=path, **kw)

    # ---- encoding ------------------------------------------------------

    def bloom_supported(self) -> bool:
        """Whether Parquet Bloom filters exist for this type (not BOOLEAN/INT96)."""
        return self.physical not in ("BOOLEAN", "INT96")

    def _fail(self, value: object, takes: str) -> TypeError:
        col = f" {self.name!r}" if self.path else ""
        return TypeError(
            f"cannot probe {type(value).__name__} {value!r:.60} against the "
            f"{self.describe()} column{col}: it takes {takes}"
        )

    def describe(self) -> str:
        """E.g. ``INT64 (TIMESTAMP MICROS)``."""
        if self.logical is None:
            base = self.physical
        else:
            extra = ""
            if self.logical in ("TIMESTAMP", "TIME"):
                extra = f" {self.unit}"
            elif self.logical == "DECIMAL":
                extra = f"({self.precision}, {self.scale})"
            elif self.logical == "INTEGER":
                extra = f"({self.bit_width}, {'signed' if self.signed else 'unsigned'})"
            base = f"{self.physical} ({self.logical}{extra})"
        if self.type_length is not None:
            base += f"[{self.type_length}]"
        return base

    def encode(self, value: object) -> bytes | None:
        """The PLAIN bytes a Parquet writer hashes for ``value`` in this
        column (BYTE_ARRAY without its length prefix); ``None`` when the
        column cannot hold the value; TypeError for an unsupported type."""
        p = self.physical
        if value is None:
            raise TypeError(
                "None (null) is never in a Bloom filter; nulls are counted by null_count")
        if p == "INT32" or p == "INT64":
            try:
                iv = self._int_value(value)
            except _NotStorable:
                return None
            if iv is None:
                return None
            bits = 32 if p == "INT32" else 64
            lo, hi = (0, 1 << bits) if self.logical == "INTEGER" and not self.signed else (
                -(1 << (bits - 1)), 1 << (bits - 1))
            if self.logical == "INTEGER" and self.bit_width < bits:
                w = self.bit_width
                lo, hi = (0, 1 << w) if not self.signed else (-(1 << (w - 1)), 1 << (w - 1))
            if not lo <= iv < hi:
                return None
            return (iv & ((1 << bits) - 1)).to_bytes(bits // 8, "little")
        if p == "FLOAT" or p == "DOUBLE":
            fv = _float_value(value)
            if fv is None:
                raise self._fail(value, "float or int")
            if isinstance(value, int) and not isinstance(value, bool) and not _int_exact(value, p):
                return None
            try:
                return (_F32 if p == "FLOAT" else _F64).pack(fv)
            except OverflowError:
                return None
        if p == "BYTE_ARRAY":
            if self.logical == "DECIMAL":
                raise TypeError(
                    f"column {self.name!r}: DECIMAL stored as BYTE_ARRAY has no fixed encoding "
                    "to hash; probe its raw bytes with a BYTE_ARRAY column type"
                )
            if isinstance(value, str):
                try:
                    return value.encode("utf-8")
                except UnicodeEncodeError:
                    return None  # lone surrogates: no UTF-8 column holds them
            if isinstance(value, (bytes, bytearray, memoryview)):
                return bytes(value)
            raise self._fail(value, "str (UTF-8) or bytes")
        if p == "FIXED_LEN_BYTE_ARRAY":
            return self._encode_flba(value)
        raise TypeError(f"column {self.name!r}: {p} columns carry no Bloom filter and no "
                        "comparable statistics")

    def _int_value(self, value: object) -> int | None:
        lg = self.logical
        if lg == "DATE":
            if isinstance(value, _dt.datetime):
                raise self._fail(value, "datetime.date or int (days since 1970-01-01)")
            if isinstance(value, _dt.date):
                return (value - _EPOCH_DATE).days
        elif lg == "TIMESTAMP":
            if isinstance(value, _dt.datetime):
                return _timestamp_units(value, self.unit or "MICROS")
            if _is_datetime64(value):
                return _datetime64_units(value, self.unit or "MICROS")
        elif lg == "TIME":
            if isinstance(value, _dt.time):
                us = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000
                us += value.microsecond
                return _us_to_unit(us, self.unit or "MICROS")
        elif lg == "DECIMAL":
            return self._unscaled(value)
        if isinstance(value, (float, str, bytes, _dt.date, _dt.time)):
            raise self._fail(value, self._int_takes())
        try:
            return int(value.__index__())  # type: ignore[attr-defined]
        except (AttributeError, TypeError):
            raise self._fail(value, self._int_takes()) from None

    def _int_takes(self) -> str:
        return {
            "DATE": "datetime.date or int (days since 1970-01-01)",
            "TIMESTAMP": f"datetime.datetime, numpy.datetime64 or int ({self.unit} since 1970)",
            "TIME": f"datetime.time or int ({self.unit} since midnight)",
            "DECIMAL": "decimal.Decimal or int",
        }.get(self.logical or "", "int")

    def _max_digits(self) -> int:
        """Decimal digits the column's unscaled integers can have at most:
        its precision, else what the storage holds (INT32 10, INT64 19, a
        FIXED_LEN_BYTE_ARRAY of n bytes 2.41 n + 1)."""
        store = {"INT32": 10, "INT64": 19}.get(self.physical)
        if store is None:
            store = (8 * (self.type_length or 0) * 30103) // 100000 + 1
        store = min(store, 4000)  # no writer's decimal comes near; keeps int() cheap
        return min(self.precision, store) if self.precision > 0 else store

    def _unscaled(self, value: object) -> int | None:
        if isinstance(value, bool) or not isinstance(value, (int, decimal.Decimal)):
            raise self._fail(value, "decimal.Decimal or int")
        d = decimal.Decimal(value)
        if d.is_nan():
            raise TypeError(f"{value} is not a number: no {self.describe()} column holds it")
        if not d.is_finite():
            return None
        if not d:
            return 0
        # Decided from the exponent, in constant time (R56): 1e999999 made a
        # million-digit int (25 s) and 1e9999999 raised decimal.Overflow.  A
        # value with more integer digits than the column has, or whose
        # leading digit lies below the scale's last, is in no row group.
        top = d.adjusted() + self.scale  # power of ten of the leading unscaled digit
        if top >= self._max_digits() or top < 0:
            return None
        scaled = d.scaleb(self.scale, context=decimal.Context(prec=10_000))
        if scaled != scaled.to_integral_value():
            return None  # more fractional digits than the scale: not storable
        return int(scaled)

    def _encode_flba(self, value: object) -> bytes | None:
        n = self.type_length or 0
        lg = self.logical
        if lg == "DECIMAL":
            u = self._unscaled(value)
            if u is None:
                return None
            try:
                return u.to_bytes(n, "big", signed=True)
            except OverflowError:
                return None
        if lg == "UUID":
            if isinstance(value, uuid.UUID):
                return value.bytes if n == 16 else None
            if isinstance(value, str):
                try:
                    return uuid.UUID(value).bytes if n == 16 else None
                except ValueError:
                    return None
        if lg == "FLOAT16" and not isinstance(value, (bytes, bytearray, memoryview)):
            fv = _float_value(value)
            if fv is None:
                raise self._fail(value, "float")
            try:
                return _F16.pack(fv) if n == 2 else None
            except OverflowError:
                return None
        if isinstance(value, (bytes, bytearray, memoryview)):
            b = bytes(value)
            return b if len(b) == n else None
        if isinstance(value, str) and lg in ("STRING", "ENUM", "JSON", None):
            b = value.encode("utf-8", "surrogatepass")
            return b if len(b) == n else None
        raise self._fail(value, f"bytes of length {n}")

    # ---- statistics order ----------------------------------------------

    def order_key(self, plain: bytes) -> Any:
        """A Python key ordered like this column's statistics (its logical
        type's sort order), from PLAIN bytes (statistics or encode()).
        None when the type has no usable order (INTERVAL, BSON, ...)."""
        p, lg = self.physical, self.logical
        if p in ("INT32", "INT64"):
            if len(plain) != (4 if p == "INT32" else 8):
                raise ValueError(f"{len(plain)}-byte statistic for a {p} column")
            unsigned = lg == "INTEGER" and not self.signed
            return int.from_bytes(plain, "little", signed=not unsigned)
        if p in ("FLOAT", "DOUBLE"):
            if len(plain) != (4 if p == "FLOAT" else 8):
                raise ValueError(f"{len(plain)}-byte statistic for a {p} column")
            f = (_F32 if p == "FLOAT" else _F64).unpack(plain)[0]
            return None if math.isnan(f) else f
        if p == "FIXED_LEN_BYTE_ARRAY":
            if lg == "DECIMAL":
                return int.from_bytes(plain, "big", signed=True) if plain else None
            if lg == "FLOAT16":
                if len(plain) != 2:
                    return None
                f = _F16.unpack(plain)[0]
                return None if math.isnan(f) else f
            if lg == "INTERVAL":
                return None
            return bytes(plain)
        if p == "BYTE_ARRAY":
            if lg in ("DECIMAL", "BSON", "VARIANT", "GEOMETRY", "GEOGRAPHY"):
                return None
            return bytes(plain)
        return None

    def signed_stats_ok(self) -> bool:
        """Whether the deprecated min/max fields (signed order) are usable."""
        if self.physical in ("FLOAT", "DOUBLE"):
            return True
        if self.physical in ("INT32", "INT64"):
            return not (self.logical == "INTEGER" and not self.signed)
        return False


def _logical_from_union(lt: dict[int, Any]) -> dict[str, Any]:
    fid, body = next(iter(lt.items()))
    body = body if isinstance(body, dict) else {}
    names = {1: "STRING", 2: "MAP", 3: "LIST", 4: "ENUM", 5: "DECIMAL", 6: "DATE", 7: "TIME",
             8: "TIMESTAMP", 10: "INTEGER", 11: "UNKNOWN", 12: "JSON", 13: "BSON", 14: "UUID",
             15: "FLOAT16", 16: "VARIANT", 17: "GEOMETRY", 18: "GEOGRAPHY", 19: "VECTOR"}
    name = names.get(fid, f"LOGICAL_{fid}")
    kw: dict[str, Any] = {"logical": name}
    if name == "DECIMAL":
        kw["scale"] = body.get(1, 0)
        kw["precision"] = body.get(2, 0)
    elif name in ("TIME", "TIMESTAMP"):
        kw["utc"] = bool(body.get(1, True))
        unit = body.get(2)
        uid = next(iter(unit), 2) if isinstance(unit, dict) and unit else 2
        kw["unit"] = {1: "MILLIS", 2: "MICROS", 3: "NANOS"}.get(uid)
        if kw["unit"] is None:
            raise ValueError(f"unknown time unit {uid}")
    elif name == "INTEGER":
        bw = body.get(1, 64)
        if bw not in (8, 16, 32, 64):
            raise ValueError(f"INTEGER logical type with bit width {bw!r}")
        kw["bit_width"] = bw
        kw["signed"] = bool(body.get(2, True))
    return kw


def _logical_from_converted(ct: int, el: dict[int, Any]) -> dict[str, Any]:
    if ct == _CT_UTF8:
        return {"logical": "STRING"}
    if ct == _CT_ENUM:
        return {"logical": "ENUM"}
    if ct == _CT_JSON:
        return {"logical": "JSON"}
    if ct == _CT_BSON:
        return {"logical": "BSON"}
    if ct == _CT_INTERVAL:
        return {"logical": "INTERVAL"}
    if ct == _CT_DATE:
        return {"logical": "DATE"}
    if ct == _CT_DECIMAL:
        return {"logical": "DECIMAL", "scale": el.get(7, 0), "precision": el.get(8, 0)}
    if ct in (_CT_TIME_MILLIS, _CT_TIME_MICROS):
        return {"logical": "TIME", "unit": "MILLIS" if ct == _CT_TIME_MILLIS else "MICROS"}
    if ct in (_CT_TS_MILLIS, _CT_TS_MICROS):
        return {"logical": "TIMESTAMP", "unit": "MILLIS" if ct == _CT_TS_MILLIS else "MICROS"}
    if ct in _CT_UINT:
        return {"logical": "INTEGER", "bit_width": _CT_UINT[ct], "signed": False}
    if ct in _CT_INT:
        return {"logical": "INTEGER", "bit_width": _CT_INT[ct], "signed": True}
    return {}


def _float_value(value: object) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, float):
        return value
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    if isinstance(value, (str, bytes, bytearray, memoryview, decimal.Decimal)):
        return None
    try:
        return float(value)  # type: ignore[arg-type]  # numpy floats and ints
    except (TypeError, ValueError):
        return None


def _int_exact(v: int, physical: str) -> bool:
    """Whether the int is exactly a FLOAT / DOUBLE value (else in no row)."""
    try:
        f = float(v)
    except OverflowError:
        return False
    if physical == "FLOAT":
        try:
            f = _F32.unpack(_F32.pack(f))[0]
        except OverflowError:
            return False
    return math.isfinite(f) and int(f) == v


def _timestamp_units(value: _dt.datetime, unit: str) -> int:
    # Naive datetimes are wall-clock values taken as UTC (how writers store
    # both local and UTC-adjusted timestamps from naive input); aware ones
    # are converted to UTC.
    delta = value - _EPOCH_UTC if value.tzinfo is not None else value - _EPOCH
    us = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if unit == "NANOS":
        return us * 1000 + int(getattr(value, "nanosecond", 0))
    return _us_to_unit(us, unit)


class _NotStorable(Exception):
    """A value of a supported type that the column cannot hold exactly."""


def _us_to_unit(us: int, unit: str) -> int:
    if unit == "MILLIS":
        if us % 1000:
            raise _NotStorable
        return us // 1000
    return us * 1000 if unit == "NANOS" else us


def _is_datetime64(value: object) -> bool:
    return type(value).__name__ == "datetime64"


def _datetime64_units(value: Any, unit: str) -> int:
    import numpy as np

    code = {"MILLIS": "ms", "MICROS": "us", "NANOS": "ns"}[unit]
    conv = value.astype(f"datetime64[{code}]")
    if conv.astype(value.dtype) != value:
        raise _NotStorable
    return int(conv.astype(np.int64))


def value_from_text(col: ColumnType, text: str) -> object:
    """A command-line value as the column's Python value: ints for INT32 /
    INT64, floats for FLOAT / DOUBLE, ISO dates and datetimes for DATE and
    TIMESTAMP, decimals for DECIMAL, hex (``0x...``) or UTF-8 for byte
    arrays.  ValueError with the column's type when the text does not parse."""
    lg, p = col.logical, col.physical
    try:
        if lg == "DATE":
            return _dt.date.fromisoformat(text)
        if lg == "TIMESTAMP":
            if text.lstrip("-").isdigit():
                return int(text)
            return _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        if lg == "TIME":
            return int(text) if text.isdigit() else _dt.time.fromisoformat(text)
        if lg == "DECIMAL":
            d = decimal.Decimal(text)
            if d.is_nan():
                raise ValueError("not a number")
            return d
        if lg == "UUID":
            return uuid.UUID(text)
        if p in ("INT32", "INT64"):
            # decimal as written ("0123" is 123); 0x / 0o / 0b prefixes too
            return parse_int(text)
        if p in ("FLOAT", "DOUBLE") or lg == "FLOAT16":
            return float(text)
        if p in ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"):
            if text.startswith("0x") and lg not in ("STRING", "ENUM", "JSON"):
                return bytes.fromhex(text[2:])
            return text
    except (ValueError, decimal.InvalidOperation) as e:
        raise ValueError(f"{text!r} is not a value of the {col.describe()} column "
                         f"{col.name!r}: {e}") from None
    raise ValueError(f"column {col.name!r}: {p} columns cannot be probed")
