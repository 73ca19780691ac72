"""One format for every structure: bytes, files, memory maps and the kind registry.

- ``dumps(f)`` is ``f.to_bytes()``; ``loads(data)`` reads the kind from the
  header and returns an instance of the right class, through the one C
  validator.  ``save``/``load`` add atomic files.
- ``open(path, mode)`` memory-maps a saved file in O(1) and returns the
  ordinary structure object (a :class:`bloomkit.BloomFilter`, ...) working
  in place on the map; ``create(path, capacity, ...)`` makes a new mapped
  file without building the structure in memory.  ``flush``/``close``/
  ``verify`` act on a mapped object (they are also methods of every
  registered class, see :class:`Persistent`).

Design of a mapped object (docs/FORMAT.md, "Mapped files"): the object is
the normal class, so ``key in f`` and ``f.add(key)`` are the same C calls as
in memory.  The C object holds a buffer export of the ``mmap`` (so the map
lives as long as the object); the file descriptor, the mode and the lock
are kept here, in a registry keyed by the object's identity and cleared by
a weak reference when the object dies.  ``close()`` seals, clears DIRTY
(when this is the last writer), detaches the object from the map (so no
view dangles) and only then closes the map.

Writers of one file coordinate through ``flock``: every "r+" opener holds a
shared lock for as long as it is open and marks the file DIRTY; a closer
that can upgrade to an exclusive lock is the last writer and clears DIRTY.
A crashed writer's lock is released by the kernel, and its DIRTY mark
stays: ``verify()`` then reports an unclean file, not a checksum error.
"""

from __future__ import annotations

import atexit
import builtins
import mmap
import os
import secrets
import struct
import sys
import threading
import warnings
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from . import _core
from .errors import FormatError, UncleanFileError, UnsupportedFormatError

__all__ = [
    "Persistent",
    "close",
    "create",
    "dumps",
    "flush",
    "load",
    "loads",
    "open",
    "register_kind",
    "save",
    "verify",
]

_T = TypeVar("_T")

FLAG_DIRTY = 0x0001
_OFF_FLAGS = 14
_OFF_PAYLOAD_LEN = 32
_OFF_CHECKSUM = 40
_FIXED_HEADER = 64

_KINDS: dict[int, type[Any]] = {}

PathLike = str | os.PathLike[str]

# ---- Begin logic for the kind registry ------------------------------------


def register_kind(kind: int, cls: type[Any]) -> None:
    """Make ``loads``/``load``/``open`` return ``cls`` for states of ``kind``.

    A class that does not inherit :class:`Persistent` gets its file methods
    (``save``, ``open``, ``create``, ``flush``, ``close``, ``verify`` and the
    context manager) attached here, unless it defines them itself, so every
    registered structure offers the same file API.
    """
    _KINDS[kind] = cls
    if not issubclass(cls, Persistent):
        for name in _PERSISTENT_API:
            if name not in dir(cls):
                setattr(cls, name, Persistent.__dict__[name])


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


# ---- End logic for the kind registry --------------------------------------

# ---- Begin logic for atomic files -----------------------------------------


def _fsync_dir(directory: str) -> None:
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:  # some platforms cannot open directories
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def _temp_path(path: str) -> str:
    directory, base = os.path.split(os.path.abspath(path))
    return os.path.join(directory, f".{base}.{secrets.token_hex(6)}.bktmp")


def _atomic_write(path: PathLike, write: Callable[[int], None]) -> None:
    """Create a temporary file next to ``path``, let ``write(fd)`` fill it,
    fsync it, rename it over ``path`` and fsync the directory.  On any
    failure the temporary file is removed and ``path`` is untouched."""
    path = os.fspath(path)
    tmp = _temp_path(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        try:
            write(fd)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(os.path.dirname(os.path.abspath(path)))


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view.nbytes:
        n = os.write(fd, view)
        view = view[n:]


def save(obj: Any, path: PathLike) -> None:
    """Write ``obj``'s state to ``path`` atomically.

    The bytes go to a temporary file in the same directory, which is
    fsynced and renamed over ``path``; the directory is then fsynced, so a
    crash leaves either the old file or the new one, never a mix, and a
    failure leaves ``path`` as it was with no temporary file behind.
    """
    data = dumps(obj)
    _atomic_write(path, lambda fd: _write_all(fd, data))


def load(
    path: PathLike,
    *,
    secret: bytes | None = None,
    key: Any = None,
    max_bytes: int | None = None,
    verify: bool = True,
) -> Any:
    """Read a structure saved with :func:`save` (any kind) into memory."""
    with builtins.open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if max_bytes is not None and size > max_bytes:
            raise FormatError(f"{os.fspath(path)}: {size} bytes, over max_bytes={max_bytes}")
        data = fh.read()
    return loads(data, secret=secret, key=key, verify=verify)


# ---- End logic for atomic files -------------------------------------------

# ---- Begin logic for locks --------------------------------------------------

if sys.platform != "win32":
    import fcntl

    def _lock_shared(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_SH)

    def _try_lock_exclusive(fd: int) -> bool:
        # Linux drops the shared lock when the upgrade fails: only call this
        # when the lock is no longer needed (closing).
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        return True

else:  # pragma: no cover - no flock: one writer per file is assumed

    def _lock_shared(fd: int) -> None:
        pass

    def _try_lock_exclusive(fd: int) -> bool:
        return True


# ---- End logic for locks ----------------------------------------------------

# ---- Begin logic for mapped files -------------------------------------------


class _Mapping:
    """What a mapped object needs besides its C state: the file and the map."""

    __slots__ = ("fd", "mm", "mode", "path", "ref")

    def __init__(self, path: str, mode: str, fd: int, mm: mmap.mmap) -> None:
        self.path = path
        self.mode = mode
        self.fd = fd
        self.mm = mm
        self.ref: weakref.ref[Any] | None = None


_OPEN: dict[int, _Mapping] = {}
_OPEN_LOCK = threading.Lock()


def _register(obj: Any, rec: _Mapping) -> None:
    key = id(obj)

    def _gone(_ref: weakref.ref[Any], key: int = key) -> None:
        with _OPEN_LOCK:
            dead = _OPEN.get(key)
            if dead is None or dead.ref is not _ref:
                return
            del _OPEN[key]
        _finalize_dead(dead)

    rec.ref = weakref.ref(obj, _gone)
    with _OPEN_LOCK:
        _OPEN[key] = rec


def _mapping_of(obj: Any) -> _Mapping | None:
    with _OPEN_LOCK:
        rec = _OPEN.get(id(obj))
    if rec is None or rec.ref is None or rec.ref() is not obj:
        return None
    return rec


def _pop_mapping(obj: Any) -> _Mapping | None:
    with _OPEN_LOCK:
        rec = _OPEN.get(id(obj))
        if rec is None or rec.ref is None or rec.ref() is not obj:
            return None
        del _OPEN[id(obj)]
    return rec


def _finalize_dead(rec: _Mapping) -> None:
    """An "r+" object was dropped without close(): seal the map at the byte
    level (the object is gone; its export of the map is being released)."""
    try:
        if rec.mode == "r+":
            warnings.warn(
                f"bloomkit: {rec.path!r} was opened 'r+' and never closed; "
                "closing it on garbage collection",
                ResourceWarning,
                stacklevel=2,
            )
            last = _try_lock_exclusive(rec.fd)
            struct.pack_into("<Q", rec.mm, _OFF_CHECKSUM, _core.checksum(_buf(rec.mm)))
            if last:
                (flags,) = struct.unpack_from("<H", rec.mm, _OFF_FLAGS)
                struct.pack_into("<H", rec.mm, _OFF_FLAGS, flags & ~FLAG_DIRTY)
            rec.mm.flush()
    except Exception:  # a finalizer must not raise; the file stays DIRTY
        pass
    finally:
        try:
            os.close(rec.fd)
        except OSError:
            pass


def _buf(mm: mmap.mmap) -> Any:
    """An mmap as the bytes-like argument of the _core helpers (typing only)."""
    return mm


def _size_check(path: str, fd: int, max_bytes: int | None) -> tuple[int, dict[str, Any]]:
    size = os.fstat(fd).st_size
    if max_bytes is not None and size > max_bytes:
        raise FormatError(f"{path}: {size} bytes, over max_bytes={max_bytes}")
    if size < _FIXED_HEADER:
        raise FormatError(
            f"{path}: {size} bytes, shorter than the 64-byte bloomkit header (truncated)"
        )
    head = os.pread(fd, _FIXED_HEADER, 0)
    # The declared lengths are checked against the real file size before
    # anything is mapped: a short file is a FormatError, never a SIGBUS.
    header = _core.peek_header(head, size)
    return size, header


def _check_bytes(buf: Any, where: str) -> dict[str, Any]:
    """Full verification of a state buffer: structure, then DIRTY, then the
    checksum.  A DIRTY file that is structurally sound is unclean, not
    corrupt (its checksum is expected to be stale)."""
    header = _core.peek_header(buf)
    if header["flags"] & FLAG_DIRTY:
        _core.validate(buf, checksum=False, allow_dirty=True)
        raise UncleanFileError(
            f"{where}: unclean: marked open for writing (a writer is active or was killed "
            "before close()); its checksum is not current.  Keys added before the writer's "
            "last flush() are present; open it 'r+' and close it to mark it clean again"
        )
    return _core.validate(buf, checksum=True)


def _map(path: str, fd: int, size: int, writable: bool) -> mmap.mmap:
    access = mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ
    return mmap.mmap(fd, size, access=access)


def _mark_dirty(obj: Any, mm: mmap.mmap) -> None:
    obj._set_dirty(True)
    mm.flush(0, min(len(mm), mmap.PAGESIZE))  # on disk before the first add


def open(
    path: PathLike,
    mode: str = "r",
    *,
    secret: bytes | None = None,
    key: Any = None,
    verify: bool = False,
    max_bytes: int | None = None,
) -> Any:
    """Memory-map a saved structure and return it, working in place on the file.

    ``mode="r"`` maps read-only (adds raise TypeError); ``"r+"`` maps
    shared and writable: adds go straight into the file, atomically, so
    several processes may add to one file at once.  Opening costs O(1): the
    lengths are checked against the file size, the checksum is not read
    (``verify=True`` checks it and the structure first, or call
    :func:`verify` later).  A file left DIRTY by a killed writer opens.
    Close with :func:`close` (or ``f.close()``, or a ``with`` block).
    """
    if mode not in ("r", "r+"):
        raise ValueError(f"mode must be 'r' or 'r+', not {mode!r}")
    spath = os.fspath(path)
    writable = mode == "r+"
    fd = os.open(spath, (os.O_RDWR if writable else os.O_RDONLY) | getattr(os, "O_CLOEXEC", 0))
    try:
        if writable:
            _lock_shared(fd)  # waits while a last writer is sealing the file
        size, header = _size_check(spath, fd, max_bytes)
        cls = _class_for(header)
        mm = _map(spath, fd, size, writable)
        obj = None
        try:
            if verify:
                _check_bytes(mm, spath)
            obj = cls._from_buffer(
                mm, secret, key, writable=writable, shared=writable, allow_dirty=True
            )
            if writable:
                _mark_dirty(obj, mm)
        except BaseException:
            if obj is not None:
                obj._detach()
            del obj
            mm.close()
            raise
    except BaseException:
        os.close(fd)
        raise
    _register(obj, _Mapping(spath, mode, fd, mm))
    return obj


def create(
    path: PathLike,
    capacity: int,
    error_rate: float = 0.01,
    *,
    kind: type[Any] | None = None,
    key: Any = None,
    **params: Any,
) -> Any:
    """Make a new mapped structure at ``path`` and return it open "r+".

    The structure is never built in memory: its header is written to a
    temporary file that is then extended with zeros (sparse on most file
    systems) and renamed over ``path``.  ``kind`` is the class (default
    :class:`bloomkit.BloomFilter`); ``params`` go to its sizing (``seed=``,
    ``secret=``, ...).  The file is DIRTY until closed.
    """
    cls = kind if kind is not None else _KINDS[1]
    maker = getattr(cls, "_create_header", None)
    if maker is None:
        raise TypeError(f"{getattr(cls, '__name__', cls)!r} cannot be created as a mapped file")
    head = bytearray(maker(capacity, error_rate, **params))
    if len(head) < _FIXED_HEADER:
        raise FormatError("internal error: a created header is shorter than 64 bytes")
    (payload_len,) = struct.unpack_from("<Q", head, _OFF_PAYLOAD_LEN)
    total = len(head) + payload_len
    header = _core.peek_header(bytes(head[:_FIXED_HEADER]), total)
    if header["header_len"] != len(head):
        raise FormatError("internal error: a created header does not match its header_len")
    (flags,) = struct.unpack_from("<H", head, _OFF_FLAGS)
    struct.pack_into("<H", head, _OFF_FLAGS, flags | FLAG_DIRTY)

    # The descriptor that writes the temporary file stays open past the
    # rename: it holds the writer's lock and backs the map.
    spath = os.fspath(path)
    tmp = _temp_path(spath)
    flags_rw = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(tmp, flags_rw, 0o666)
    try:
        _lock_shared(fd)
        _write_all(fd, bytes(head))
        os.ftruncate(fd, total)
        os.fsync(fd)
        os.replace(tmp, spath)
    except BaseException:
        os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(os.path.dirname(os.path.abspath(spath)))
    try:
        mm = _map(spath, fd, total, True)
        try:
            obj = cls._from_buffer(
                mm, params.get("secret"), key, writable=True, shared=True, allow_dirty=True
            )
        except BaseException:
            mm.close()
            raise
    except BaseException:
        os.close(fd)
        raise
    _register(obj, _Mapping(spath, "r+", fd, mm))
    return obj


def flush(obj: Any) -> None:
    """Make a mapped object's file durable and its checksum current.

    For "r+" maps: seal (recompute the checksum in place) and ``msync``.
    The DIRTY mark stays until :func:`close`.  A no-op for "r" maps and for
    in-memory objects.
    """
    rec = _mapping_of(obj)
    if rec is None or rec.mode != "r+":
        return
    obj._seal()
    rec.mm.flush()


def close(obj: Any) -> None:
    """Flush and unmap a mapped object; clear DIRTY if it was the last writer.

    The object is detached from the map first (it becomes an empty
    read-only filter), so no view of the unmapped memory remains.  Closing
    twice, or closing an in-memory object, does nothing.
    """
    rec = _pop_mapping(obj)
    if rec is None:
        return
    try:
        if rec.mode == "r+":
            last = _try_lock_exclusive(rec.fd)
            obj._seal()
            if last:
                obj._set_dirty(False)
            rec.mm.flush()
    finally:
        try:
            obj._detach()
            rec.mm.close()
        finally:
            os.close(rec.fd)


def verify(target: Any) -> dict[str, Any]:
    """Check a file, a mapped object or an in-memory object completely.

    Runs the checksum and the deep (O(payload)) validation.  Returns the
    header as a dict when everything is sound; raises
    :class:`~bloomkit.UncleanFileError` for a file still marked open for
    writing (a crashed writer, or another process writing now),
    :class:`~bloomkit.UnsupportedFormatError` for a version or kind this
    bloomkit cannot read, and :class:`~bloomkit.FormatError` (or its
    :class:`~bloomkit.ChecksumError`) for corrupt data.

    On an object this process has open "r+", ``verify()`` flushes first and
    checks the checksum it just wrote; the DIRTY mark it holds itself does
    not count as unclean (a mismatch then means other writers are active).
    """
    if isinstance(target, (str, os.PathLike)):
        spath = os.fspath(target)
        fd = os.open(spath, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            size, _ = _size_check(spath, fd, None)
            mm = _map(spath, fd, size, False)
            try:
                return _check_bytes(mm, spath)
            finally:
                mm.close()
        finally:
            os.close(fd)
    rec = _mapping_of(target)
    if rec is None:
        if getattr(target, "mapped", False):
            raise ValueError("this mapped object was not opened by bloomkit.open() or was closed")
        return _check_bytes(target.to_bytes(), repr(type(target).__name__))
    if rec.mode == "r":
        return _check_bytes(rec.mm, rec.path)
    flush(target)
    _core.validate(_buf(rec.mm), checksum=False, allow_dirty=True)
    if _core.checksum(_buf(rec.mm)) != struct.unpack_from("<Q", rec.mm, _OFF_CHECKSUM)[0]:
        raise UncleanFileError(
            f"{rec.path}: unclean: the checksum changed while it was being written "
            "(other writers are active)"
        )
    return _core.validate(_buf(rec.mm), checksum=True, allow_dirty=True)


@atexit.register
def _close_all() -> None:
    with _OPEN_LOCK:
        recs = list(_OPEN.values())
    for rec in recs:
        obj = rec.ref() if rec.ref is not None else None
        if obj is not None:
            try:
                close(obj)
            except Exception:
                pass


# ---- End logic for mapped files ---------------------------------------------


class Persistent:
    """File methods shared by every bloomkit structure (a mixin, no state).

    ``save(path)``, ``Class.open(path, mode)``, ``Class.create(path, ...)``,
    ``flush()``, ``close()``, ``verify()`` and ``with f: ...`` (which closes
    a mapped object on exit).  Classes registered with
    :func:`register_kind` that do not inherit it get these methods attached.
    """

    __slots__ = ()

    def save(self, path: PathLike) -> None:
        """Write the state to ``path`` atomically (see :func:`bloomkit.save`)."""
        save(self, path)

    @classmethod
    def open(
        cls: type[_T],
        path: PathLike,
        mode: str = "r",
        *,
        secret: bytes | None = None,
        key: Any = None,
        verify: bool = False,
    ) -> _T:
        """Memory-map a file holding this class (see :func:`bloomkit.open`)."""
        obj = open(path, mode, secret=secret, key=key, verify=verify)
        if not isinstance(obj, cls):
            name = type(obj).__name__
            close(obj)
            raise FormatError(f"{os.fspath(path)} holds a {name}, not a {cls.__name__}")
        return obj

    @classmethod
    def create(
        cls: type[_T], path: PathLike, capacity: int, error_rate: float = 0.01, **params: Any
    ) -> _T:
        """A new mapped file of this class, open "r+" (see :func:`bloomkit.create`)."""
        obj: _T = create(path, capacity, error_rate, kind=cls, **params)
        return obj

    def flush(self) -> None:
        """Seal and msync a mapped object (see :func:`bloomkit.flush`)."""
        flush(self)

    def close(self) -> None:
        """Flush and unmap a mapped object (see :func:`bloomkit.close`)."""
        close(self)

    def verify(self) -> dict[str, Any]:
        """Checksum and deep validation (see :func:`bloomkit.verify`)."""
        return verify(self)

    def __enter__(self: _T) -> _T:
        return self

    def __exit__(self, *exc: object) -> None:
        close(self)


_PERSISTENT_API = ("save", "open", "create", "flush", "close", "verify", "__enter__", "__exit__")
