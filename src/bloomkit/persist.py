"""One format for every structure: bytes, files and the kind registry.

``dumps(f)`` is ``f.to_bytes()``; ``loads(data)`` reads the kind from the
header and returns an instance of the right class, through the one C
validator.  ``save``/``load`` add atomic files.  See docs/FORMAT.md.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from . import _core
from .errors import FormatError, UnsupportedFormatError

__all__ = ["dumps", "load", "loads", "register_kind", "save"]

_KINDS: dict[int, type[Any]] = {}


def register_kind(kind: int, cls: type[Any]) -> None:
    """Make ``loads``/``load`` return ``cls`` for states of ``kind``."""
    _KINDS[kind] = cls


def dumps(obj: Any) -> bytes:
    """The full state of a bloomkit structure (header, payload, checksum)."""
    data: bytes = obj.to_bytes()
    return data


def _class_for(header: dict[str, Any]) -> type[Any]:
    cls = _KINDS.get(header["kind"])
    if cls is None:
        raise UnsupportedFormatError(
            f"structure kind {header['kind']} ({header['kind_name']}) is not supported by "
            "this version of bloomkit"
        )
    return cls


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
    if isinstance(data, str):
        raise TypeError("loads() takes bytes-like data, not str")
    view = memoryview(data)
    if max_bytes is not None and view.nbytes > max_bytes:
        raise FormatError(f"data is {view.nbytes} bytes, over max_bytes={max_bytes}")
    header = _core.peek_header(view)
    cls = _class_for(header)
    return cls.from_bytes(view, secret, key, verify=verify)


def save(obj: Any, path: str | os.PathLike[str]) -> None:
    """Write ``obj``'s state to ``path`` atomically.

    The bytes go to a temporary file in the same directory, which is
    fsynced and renamed over ``path``; the directory is then fsynced, so a
    crash leaves either the old file or the new one, never a mix.
    """
    data = obj.to_bytes()
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".bloomkit-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def load(
    path: str | os.PathLike[str],
    *,
    secret: bytes | None = None,
    key: Any = None,
    max_bytes: int | None = None,
    verify: bool = True,
) -> Any:
    """Read a structure saved with :func:`save` (any kind)."""
    with open(path, "rb") as fh:
        if max_bytes is not None:
            size = os.fstat(fh.fileno()).st_size
            if size > max_bytes:
                raise FormatError(f"{path}: {size} bytes, over max_bytes={max_bytes}")
        data = fh.read()
    return loads(data, secret=secret, key=key, verify=verify)
