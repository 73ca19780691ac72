"""The kind registry and the bytes round trips (``dumps`` / ``loads``).

The registry maps a container kind id (the header's ``kind``; the list of
kinds is bk_kinds.c's table of descriptors, ``_core.KINDS``) to the Python class that
loads it; :func:`bloomkit.persist.register_kind` (mixin.py) fills it.  The
few header constants the other modules of this package read are here too.
"""

from __future__ import annotations

import os
from typing import Any

from .. import _core
from ..errors import FormatError, UnsupportedFormatError

# The header's layout lives in bk_format.c (docs/FORMAT.md): this package
# writes it only through _core.set_dirty / _core.seal / _core.init_header and
# reads it through _core.peek_header (issue #24: one home for the header).
FLAG_DIRTY = 0x0001  # the bit peek_header()["flags"] reports (bk_format.h)
FIXED_HEADER = 64
OFF_PAYLOAD_LEN = 32  # read only, in create(): the header alone has no total length
PathLike = str | os.PathLike[str]

# kind id -> class: register_kind (mixin.py) fills it; loads, load and open read it
KINDS: dict[int, type[Any]] = {}


def dumps(obj: Any) -> bytes:
    """The full state of a bloomkit structure (header, payload, checksum)."""
    data: bytes = obj.to_bytes()
    return data


# Kinds that are not one in-memory structure, and how to open them instead.
_OPENED_ELSEWHERE = {
    12: "a Parquet sidecar index: open it with bloomkit.parquet.open_index(path)",
}


def class_for(header: dict[str, Any]) -> type[Any]:
    cls = KINDS.get(header["kind"])
    if cls is None and header["kind"] in _OPENED_ELSEWHERE:
        raise UnsupportedFormatError(
            f"structure kind {header['kind']} ({header['kind_name']}) is "
            f"{_OPENED_ELSEWHERE[header['kind']]}")
    if cls is None:
        raise UnsupportedFormatError(
            f"structure kind {header['kind']} ({header['kind_name']}) is not supported by "
            "this version of bloomkit"
        )
    return cls


def class_for_kind(kind: int) -> type[Any]:
    """class_for by kind id alone (bloomkit.load's reader parses the header in C)."""
    names = {k.id: name for name, k in _core.KINDS.items()}
    return class_for({"kind": kind, "kind_name": names.get(kind, "unknown")})


def loads(
    data: bytes | bytearray | memoryview,
    *,
    secret: bytes | None = None,
    key: Any = None,
    max_bytes: int | None = None,
    verify: bool = True,
) -> Any:
    """Rebuild any bloomkit structure from :func:`dumps` output.

    ``max_bytes`` refuses larger inputs before anything is parsed.  Corrupt
    or truncated input raises :class:`bloomkit.FormatError`.
    """
    try:
        if isinstance(data, str):
            raise TypeError
        view = memoryview(data)
    except TypeError:
        raise TypeError(
            "loads() takes bytes-like data (bytes, bytearray, memoryview, mmap), "
            f"not {type(data).__name__}"
        ) from None
    if max_bytes is not None and view.nbytes > max_bytes:
        raise FormatError(f"data is {view.nbytes} bytes, over max_bytes={max_bytes}")
    # bloomkit.load's path over bytes: the header parsed once in C, its kind
    # picking the class from the registry once, one copy after the validator.
    return _core.load_bytes(view, class_for_kind, secret, key, verify=verify)
