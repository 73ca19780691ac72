"""A kind's descriptor, looked up from its class or an instance.

The descriptors are written once, in C (bk_kind.h, one in each
``bk_<kind>.c``, listed in bk_kinds.c) and exported as ``_core.KINDS``
(class name -> read-only ``_core.Kind``).  Every trait, limit and header
parameter Python needs is read from there -- never from a class flag or a
class-name comparison -- so a new kind's facts are stated once.
"""

from __future__ import annotations

import struct
from typing import Any

from . import _core

_PARAMS_AT = 64  # the parameters follow the fixed 64-byte header (bk_format.h)

BY_ID: dict[int, _core.Kind] = {k.id: k for k in _core.KINDS.values()}

# The common limits (every kind's unless its descriptor says otherwise),
# as the Bloom filters' descriptor carries them.
_COMMON = _core.KINDS["BloomFilter"]
MAX_CAPACITY: int = _COMMON.capacity_max or 0
MIN_ERROR_RATE: float = _COMMON.error_rate_min or 0.0
MAX_ERROR_RATE: float = _COMMON.error_rate_max or 0.0


def of(cls_or_obj: Any) -> _core.Kind | None:
    """The descriptor of a structure class (or of an instance's class), by its
    ``_bk_kind`` id; None for a class that is no kind (TopK, a plain object)."""
    cls = cls_or_obj if isinstance(cls_or_obj, type) else type(cls_or_obj)
    kind = getattr(cls, "_bk_kind", None)
    return BY_ID.get(kind) if isinstance(kind, int) else None


def named(name: str) -> _core.Kind:
    """The descriptor of the kind whose class is called ``name``."""
    return _core.KINDS[name]


def power_text(n: int) -> str:
    """2**48 for 2**48: how a limit reads in a message."""
    return f"2**{n.bit_length() - 1}" if n > 0 and n & (n - 1) == 0 else str(n)


def capacity_range(kind: _core.Kind) -> str:
    """``[1, 2**48]``: the kind's capacity range as messages write it."""
    return f"[1, {power_text(kind.capacity_max or 0)}]"


def error_rate_range(kind: _core.Kind) -> str:
    """``[1e-09, 0.5]`` or ``[1e-12, 1)``: the kind's error-rate range."""
    close = "]" if kind.error_rate_max_closed else ")"
    return f"[{kind.error_rate_min:g}, {kind.error_rate_max:g}{close}"


def error_rate_ok(kind: _core.Kind, p: float) -> bool:
    """Whether a constructor of this kind accepts the error rate p (False for NaN)."""
    lo, hi = kind.error_rate_min, kind.error_rate_max
    if lo is None or hi is None:
        return False
    return lo <= p <= hi if kind.error_rate_max_closed else lo <= p < hi


def pack_params(kind: _core.Kind, buf: bytearray, **values: Any) -> None:
    """Write header parameters by name into a state's header ``buf``, as the
    kind's descriptor lays them out (from byte 64); a parameter not given
    keeps the bytes there (zeros in a fresh header).  An unknown name raises."""
    layout = {name: (offset, fmt) for name, offset, _, fmt in kind.param_layout}
    for name, value in values.items():
        offset, fmt = layout[name]
        struct.pack_into("<" + fmt, buf, _PARAMS_AT + offset, value)


def params_struct(kind: _core.Kind) -> struct.Struct:
    """One struct over the kind's whole parameter area, in offset order (pad
    bytes for any gap), to unpack every parameter at once from byte 64."""
    fmt, at = "<", 0
    for _, offset, width, f in sorted(kind.param_layout, key=lambda p: p[1]):
        fmt += "x" * (offset - at) + f
        at = offset + width
    return struct.Struct(fmt + "x" * (kind.params_len - at))
