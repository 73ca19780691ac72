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

Writers of one file coordinate through two record locks on the file
(bloomkit/_locking.py has the protocol and its reasoning): the kinds whose
in-place adds are atomic ORs or increments (Bloom, counting Bloom,
count-min) admit many writers at once, every other kind one writer at a
time (a second one waits, up to ``timeout``).  Every writer marks the file
DIRTY; the last one out clears it.  A crashed writer's locks are released
by the kernel and its DIRTY mark stays: the next writer, or
:func:`repair`, finds no writer in, recounts and reseals.  ``verify()`` and
``load()`` of a file a writer is using raise :class:`FileInUseError` (a
live state is never called corrupt), and ``save``/``create`` refuse to
replace a file that has writers.
"""

from __future__ import annotations

import atexit
import builtins
import hashlib
import mmap
import os
import re
import secrets
import socket
import struct
import sys
import threading
import warnings
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from . import _core, _locking
from .errors import (
    FileInUseError,
    FormatError,
    SizeLimitError,
    UncleanFileError,
    UnsupportedFormatError,
)

__all__ = [
    "SPARSE_MAX_BYTES",
    "Persistent",
    "close",
    "create",
    "dumps",
    "flush",
    "load",
    "loads",
    "open",
    "register_kind",
    "repair",
    "save",
    "verify",
]

_T = TypeVar("_T")

# The header's layout lives in bk_format.c (docs/FORMAT.md): this module
# writes it only through _core.set_dirty / _core.seal / _core.init_header and
# reads it through _core.peek_header (issue #24: one home for the header).
FLAG_DIRTY = 0x0001  # the bit peek_header()["flags"] reports (bk_format.h)
_FIXED_HEADER = 64
_OFF_PAYLOAD_LEN = 32  # read only, in create(): the header alone has no total length

_KINDS: dict[int, type[Any]] = {}

PathLike = str | os.PathLike[str]

# ---- Begin logic for the kind registry ------------------------------------


def register_kind(kind: int, cls: type[Any]) -> None:
    """Make ``loads``/``load``/``open`` return ``cls`` for states of ``kind``.

    Every bloomkit class inherits :class:`Persistent` for its file methods
    (``save``, ``open``, ``create``, ``flush``, ``close``, ``verify`` and the
    context manager): one mechanism, visible to type checkers.  A class from
    outside bloomkit that does not inherit it gets the same methods attached
    here (unless it defines them itself), so every registered structure
    offers the same file API; tests/test_persist.py checks that no bloomkit
    class relies on that fallback.
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


# Kinds that are not one in-memory structure, and how to open them instead.
_OPENED_ELSEWHERE = {
    12: "a Parquet sidecar index: open it with bloomkit.parquet.open_index(path)",
}


def _class_for(header: dict[str, Any]) -> type[Any]:
    cls = _KINDS.get(header["kind"])
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


def _class_for_kind(kind: int) -> type[Any]:
    """_class_for by kind id alone (bloomkit.load's reader parses the header in C)."""
    names = {k: name for name, k in _core.KINDS.items()}
    return _class_for({"kind": kind, "kind_name": names.get(kind, "unknown")})


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
    return _core.load_bytes(view, _class_for_kind, secret, key, verify=verify)


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


def _atomic_write(path: PathLike, write: Callable[[int], None]) -> None:
    """Create a temporary file next to ``path``, let ``write(fd)`` fill it,
    fsync it, rename it over ``path`` and fsync the directory.  On any
    failure the temporary file is removed and ``path`` is untouched.

    Temporaries left by killed writers of ``path`` are removed first (see
    "temporary files" below), so that repeated crashes cannot fill the disk
    with full-size copies."""
    path = os.fspath(path)
    _clean_stale_temporaries(path)
    tmp, fd = _create_temp(path, os.O_RDWR)  # RDWR: save() reads its header back to seal it
    try:
        try:
            write(fd)
            os.fsync(fd)
        finally:
            os.close(fd)
        with _locking.replacing(path):  # refused while writers have it open
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


def _pwrite_all(fd: int, data: bytes, offset: int) -> None:
    if hasattr(os, "pwrite"):
        view = memoryview(data)
        while view.nbytes:
            n = os.pwrite(fd, view, offset)
            view, offset = view[n:], offset + n
    else:  # pragma: no cover - Windows
        end = os.lseek(fd, 0, os.SEEK_CUR)
        os.lseek(fd, offset, os.SEEK_SET)
        _write_all(fd, data)
        os.lseek(fd, end, os.SEEK_SET)


def save(obj: Any, path: PathLike) -> None:
    """Write ``obj``'s state to ``path`` atomically.

    The bytes go to a temporary file in the same directory, which is
    fsynced and renamed over ``path``; the directory is then fsynced, so a
    crash leaves either the old file or the new one, never a mix, and a
    failure leaves ``path`` as it was with no temporary file behind.
    Replacing a file that a writer has open "r+" (in any process) raises
    :class:`~bloomkit.FileInUseError`: the writer's later adds would go to
    the replaced file and be lost.

    Memory: the state is streamed from the live structure through a 1 MiB
    buffer, the checksum computed as it goes (``_write_state``), so saving
    needs no second copy of the state (R33).  Structures without
    ``_write_state`` (pure-Python kinds) are written from ``dumps(obj)``.
    """
    writer = getattr(obj, "_write_state", None)
    if writer is None:
        data = dumps(obj)
        _atomic_write(path, lambda fd: _write_all(fd, data))
        return

    def write(fd: int) -> None:
        checksum = writer(fd)  # header written with checksum 0, then the payload
        head = bytearray(os.pread(fd, _FIXED_HEADER, 0))
        _core.seal(head, checksum)
        _pwrite_all(fd, bytes(head), 0)

    _atomic_write(path, write)


def load(
    path: PathLike,
    *,
    secret: bytes | None = None,
    key: Any = None,
    max_bytes: int | None = None,
    verify: bool = True,
) -> Any:
    """Read a structure saved with :func:`save` (any kind) into memory.

    ``max_bytes`` refuses larger files before reading; without it a sparse
    file over :data:`SPARSE_MAX_BYTES` is refused (see :func:`open`).  A
    file a writer has open raises :class:`~bloomkit.FileInUseError`; one
    left DIRTY by a killed writer raises :class:`~bloomkit.UncleanFileError`
    (``bloomkit repair FILE`` makes it loadable).

    The file is read once, straight into the structure's aligned state
    buffer (``_core.load_fd``): the header is parsed once, by the one
    validator, whose kind picks the class from the registry; memory is the
    state's size, with no intermediate ``bytes`` copy."""
    spath = os.fspath(path)
    with builtins.open(spath, "rb", buffering=0) as fh:
        st = os.fstat(fh.fileno())
        _check_size(spath, st, max_bytes, full_pass=True)
        # no writer joins or leaves while the bytes are read (a state read
        # while it moves would fail its checksum: "corrupt" for a live file)
        with _locking.stable(fh.fileno(), spath) as live:
            if live:
                raise _locking.in_use_error(spath, "a writer has it open 'r+'")
            try:
                return _core.load_fd(
                    fh.fileno(), st.st_size, _class_for_kind, secret, key, verify=verify
                )
            except FileInUseError:
                raise
            except UncleanFileError:
                raise _unclean_error(spath) from None
            except MemoryError:
                raise MemoryError(
                    f"cannot read {st.st_size} bytes ({_human(st.st_size)}) of {spath} into "
                    "memory: use bloomkit.open(path) to map it instead, or free memory"
                ) from None


# ---- End logic for atomic files -------------------------------------------

# ---- Begin logic for temporary files ----------------------------------------
#
# A temporary file is named ``.<name>.<host>-<boot>-<pid>-<random>.bktmp``
# (host: 6 hex digits of a hash of the host name; boot: of the kernel's boot
# id where there is one, else "000000"), and its writer holds an exclusive
# ``flock`` on it from creation to rename (``create()``'s writer a shared
# one).  A temporary is *stale* -- its writer is dead -- and removed by the
# next save of the same path when all of these hold:
#
# 1. its name parses and its host is this host (a writer on another host of
#    a shared file system cannot be checked: never touched);
# 2. its boot is not this boot (the machine restarted since), or no process
#    with its pid is alive (``kill(pid, 0)``: ESRCH);
# 3. an exclusive non-blocking ``flock`` on it succeeds (no process holds
#    it: this catches what the pid test cannot see, a writer in another pid
#    namespace (a container sharing the directory and the kernel) and a
#    fork that inherited a live writer's descriptor).
#
# A live writer always fails 2 or 3, so its temporary is never removed; a
# reused pid can only keep a stale temporary (until that process exits),
# never delete a live one.  Names that do not parse (older bloomkit
# versions wrote ``.<name>.<12 hex>.bktmp``) are reported, never removed.
# ``bloomkit verify`` and ``info`` list what they find (``_temporaries``).

_TMP_SUFFIX = ".bktmp"
_TMP_RE = re.compile(r"([0-9a-f]{6})-([0-9a-f]{6})-([0-9]{1,10})-[0-9a-f]{6}\.bktmp")
_TMP_OLD_RE = re.compile(r"[0-9a-f]{12}\.bktmp")
_IDS: tuple[str, str] | None = None


def _short_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=3).hexdigest()


def _host_boot() -> tuple[str, str]:
    """This machine's (host, boot) tags for temporary names."""
    global _IDS
    if _IDS is None:
        try:
            with builtins.open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
                boot = _short_hash(fh.read().strip())
        except OSError:
            boot = "000000"
        _IDS = (_short_hash(socket.gethostname()), boot)
    return _IDS


def _temp_path(path: str) -> str:
    directory, base = os.path.split(os.path.abspath(path))
    host, boot = _host_boot()
    name = f".{base}.{host}-{boot}-{os.getpid()}-{secrets.token_hex(3)}{_TMP_SUFFIX}"
    return os.path.join(directory, name)


def _create_temp(path: str, access: int) -> tuple[str, int]:
    """Create a new temporary for ``path`` (O_EXCL) and take its exclusive lock."""
    tmp = _temp_path(path)
    fd = os.open(tmp, access | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    if sys.platform != "win32":
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # pragma: no cover - a fresh file nobody else has opened
            pass
    return tmp, fd


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return True  # not a writer's pid: leave it alone
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists (another user's) or cannot tell
    return True


def _temp_status(name: str, base: str) -> str | None:
    """"stale", "live", "foreign" (other host, or an older name) or None
    (not a temporary of ``base``).  "stale" still needs the lock test."""
    prefix = f".{base}."
    if not name.startswith(prefix) or not name.endswith(_TMP_SUFFIX):
        return None
    rest = name[len(prefix):]
    m = _TMP_RE.fullmatch(rest)
    if m is None:
        return "foreign" if _TMP_OLD_RE.fullmatch(rest) else None
    host, boot = _host_boot()
    if m.group(1) != host:
        return "foreign"
    if m.group(2) != boot or not _pid_alive(int(m.group(3))):
        return "stale"
    return "live"


def _unlock_free(tmp: str) -> bool:
    """True when no process holds a lock on ``tmp`` (tested by taking an
    exclusive one without waiting, then letting it go)."""
    if sys.platform == "win32":  # pragma: no cover - no flock: trust the pid
        return True
    try:
        fd = os.open(tmp, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    os.close(fd)  # the lock goes with the descriptor; the pid is dead anyway
    return True


def _temporaries(path: PathLike) -> list[dict[str, Any]]:
    """The temporary files of ``path`` in its directory: name, bytes and
    status ("stale": its writer is dead, the next save removes it; "live": a
    save is running; "foreign": written on another host or by an older
    bloomkit, owner unknown)."""
    directory, base = os.path.split(os.path.abspath(os.fspath(path)))
    found: list[dict[str, Any]] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return found
    for entry in entries:
        status = _temp_status(entry.name, base)
        if status is None:
            continue
        if status == "stale" and not _unlock_free(entry.path):
            status = "live"
        try:
            size = entry.stat(follow_symlinks=False).st_size
        except OSError:
            continue
        found.append({"name": entry.name, "path": entry.path, "bytes": size, "status": status})
    return sorted(found, key=lambda t: t["name"])


def _clean_stale_temporaries(path: str) -> None:
    """Remove the temporaries of dead writers of ``path`` (best effort)."""
    for t in _temporaries(path):
        if t["status"] == "stale":
            try:
                os.unlink(t["path"])
            except OSError:
                pass


# ---- End logic for temporary files ------------------------------------------

# ---- Begin logic for size limits ----------------------------------------------
#
# A full pass over a file (verify, open(verify=True), the seal of an "r+"
# writer's close(), load) costs time in proportion to its declared size:
# ~1 s per GiB from the page cache, holes of a sparse file included.  A
# 4 KiB sparse file declaring 1 TiB would keep one busy for 20-45 minutes
# (R16, R33).  So, unless the caller gives max_bytes:
#
# - a *sparse* file (less than 1/16 of its size allocated on disk) larger
#   than SPARSE_MAX_BYTES is refused with SizeLimitError before any work
#   where a full pass would follow; ``open(path, "r")`` without verify
#   (O(1), pages read on demand) is not affected;
# - a dense file is not limited (its bytes exist: the work matches them).
#
# An explicit max_bytes is the limit for every file, sparse or not.
# 16 GiB: the largest pass that still ends in well under a minute (16 GiB
# measured 17 s for verify), above a 10^10-key filter at 1% (11.2 GiB).  A
# file made by create() and still mostly empty is sparse too: past 16 GiB,
# reopen it with max_bytes=<its size>.  A compressing file system (ZFS,
# btrfs) can make an almost empty filter look sparse the same way.

SPARSE_MAX_BYTES = 16 * 2**30
_SPARSE_RATIO = 16


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024 or unit == "PiB":
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def _allocated(st: os.stat_result) -> int | None:
    blocks = getattr(st, "st_blocks", None)
    return None if blocks is None else int(blocks) * 512


def _is_sparse(st: os.stat_result) -> bool:
    alloc = _allocated(st)
    return alloc is not None and alloc * _SPARSE_RATIO < st.st_size


def _check_size(path: str, st: os.stat_result, max_bytes: int | None, full_pass: bool) -> None:
    """Refuse, before any work, a file over ``max_bytes`` or (when a full
    pass follows and no max_bytes is given) a sparse one over
    SPARSE_MAX_BYTES."""
    size = st.st_size
    if max_bytes is not None:
        if size > max_bytes:
            sparse = (
                f"; it is sparse: only {_human(_allocated(st) or 0)} on disk"
                if _is_sparse(st) else ""
            )
            raise SizeLimitError(
                f"{path}: {size} bytes ({_human(size)}), over max_bytes={max_bytes}{sparse}; "
                f"pass max_bytes={size} (CLI: --max-bytes {size}) to accept it"
            )
        return
    if full_pass and size > SPARSE_MAX_BYTES and _is_sparse(st):
        alloc = _allocated(st) or 0
        raise SizeLimitError(
            f"{path}: sparse file: declares {size} bytes ({_human(size)}) but only "
            f"{_human(alloc)} is on disk, and a full pass would read all of it (holes as zeros, "
            f"~1 s per GiB); refused over {_human(SPARSE_MAX_BYTES)}.  If it is yours (e.g. made "
            f"by bloomkit.create()), pass max_bytes={size} (CLI: --max-bytes {size})"
        )


# ---- End logic for size limits ------------------------------------------------

# The temporaries' liveness locks (above) are whole-file flocks; the
# writers' locks are record locks, in bloomkit/_locking.py.
if sys.platform != "win32":
    import fcntl

# ---- Begin logic for mapped files -------------------------------------------


class _Mapping:
    """What a mapped object needs besides its C state: the file and the map."""

    __slots__ = ("exclusive", "fd", "mm", "mode", "path", "ref")

    def __init__(self, path: str, mode: str, fd: int, mm: mmap.mmap, exclusive: bool) -> None:
        self.path = path
        self.mode = mode
        self.fd = fd
        self.mm = mm
        self.exclusive = exclusive  # holds the writer lock alone (not an atomic-OR kind)
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

            def sealed(last: bool) -> None:
                _seal_map(rec.mm, clean=last)
                rec.mm.flush()

            # bounded: this process may hold the gate itself (another object
            # of the same file joining); the next writer then repairs DIRTY
            _locking.leave(rec.fd, exclusive=rec.exclusive, sealed=sealed, timeout=5.0)
    except Exception:  # a finalizer must not raise; the file stays DIRTY
        pass
    finally:
        try:
            os.close(rec.fd)
        except OSError:
            pass


def _seal_map(mm: mmap.mmap, clean: bool) -> None:
    """Seal a map at the byte level: the checksum made current, and DIRTY
    cleared when ``clean`` (the last writer)."""
    _core.seal(_buf(mm))
    if clean:
        _core.set_dirty(_buf(mm), False)


def _buf(mm: mmap.mmap) -> Any:
    """An mmap as the bytes-like argument of the _core helpers (typing only)."""
    return mm


def _size_check(
    path: str, fd: int, max_bytes: int | None, full_pass: bool = False
) -> tuple[int, dict[str, Any]]:
    st = os.fstat(fd)
    size = st.st_size
    _check_size(path, st, max_bytes, full_pass)
    head = os.pread(fd, _FIXED_HEADER, 0)
    if size < _FIXED_HEADER:
        _core.peek_header(head)  # bad magic first: "not a bloomkit file" beats "truncated"
        raise FormatError(
            f"{path}: {size} bytes, shorter than the 64-byte bloomkit header (truncated)"
        )
    # The declared lengths are checked against the real file size before
    # anything is mapped: a short file is a FormatError, never a SIGBUS.
    header = _core.peek_header(head, size)
    return size, header


def _check_bytes(buf: Any, where: str) -> dict[str, Any]:
    """Full verification of a state buffer by the one validator, which holds
    the DIRTY rule: structure, then DIRTY, then the checksum.  A DIRTY state
    (its writer was killed: callers make sure no writer is in) that passes
    the O(1) checks is unclean, not corrupt: its checksum is stale and its
    counts may lag the payload until :func:`repair` recounts it and runs the
    deep checks."""
    try:
        result: dict[str, Any] = _core.validate(buf, checksum=True)
    except UncleanFileError:
        raise _unclean_error(where) from None
    return result


def _unclean_error(where: str) -> UncleanFileError:
    return UncleanFileError(
        f"{where}: unclean: marked open for writing by a writer that is gone (killed before "
        "close()); its checksum is not current.  Keys added before the writer's last flush() "
        f"are present; run `bloomkit repair {where}` (or bloomkit.repair(path)) to recount "
        "and reseal it"
    )


def _map(path: str, fd: int, size: int, writable: bool) -> mmap.mmap:
    access = mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ
    return mmap.mmap(fd, size, access=access)


def _mark_dirty(obj: Any, mm: mmap.mmap) -> None:
    obj._set_dirty(True)
    mm.flush(0, min(len(mm), mmap.PAGESIZE))  # on disk before the first add


def _recount(obj: Any) -> None:
    """After a writer was killed the stored count may lag the payload (a
    batch updates it at its end): recompute it where the payload holds it
    (cuckoo and quotient filters count their fingerprints exactly; a
    counting Bloom filter's count is sum(counters) / k while no counter is
    saturated), or store the estimate from the bits, as a union does (a
    Bloom filter's count, a counting filter's distinct count).  Kinds
    without a ``_recount`` (count-min, TinyLFU) keep their counts."""
    for name in ("_recount", "_recount_total"):
        recount = getattr(obj, name, None)
        if callable(recount):
            recount()


def _already_writing(fd: int) -> str | None:
    """The path under which this process has the file on ``fd`` open "r+"
    for a kind that admits one writer (a second writer here would wait for
    itself for ever), else None."""
    st = os.fstat(fd)
    with _OPEN_LOCK:
        recs = list(_OPEN.values())
    for rec in recs:
        if rec.mode == "r+" and rec.exclusive:
            try:
                other = os.fstat(rec.fd)
            except OSError:
                continue
            if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                return rec.path
    return None


def _joined(obj: Any, mm: mmap.mmap, path: str, alone: bool, verify: bool) -> None:
    """Run holding the gate, just after joining the writers: check, repair a
    stale DIRTY mark, then mark the file DIRTY for this writer."""
    dirty = bool(_core.peek_header(_buf(mm))["flags"] & FLAG_DIRTY)
    if verify:
        if dirty and alone:
            raise _unclean_error(path)
        # with other writers in (atomic-OR kinds only) the checksum is stale
        _core.validate(_buf(mm), checksum=not dirty, allow_dirty=True)
    elif dirty and alone:
        _recount(obj)  # a writer was killed: no one else is in
    _mark_dirty(obj, mm)


def open(
    path: PathLike,
    mode: str = "r",
    *,
    secret: bytes | None = None,
    key: Any = None,
    verify: bool = False,
    max_bytes: int | None = None,
    timeout: float | None = None,
) -> Any:
    """Memory-map a saved structure and return it, working in place on the file.

    ``mode="r"`` maps read-only (adds raise TypeError) and takes no lock.
    ``"r+"`` maps shared and writable and joins the file's writers: for
    Bloom, counting Bloom and count-min files (atomic in-place updates)
    several processes may write at once (a Bloom writer's large ``add_many``
    holds the file alone while no other process writes it, and hands it
    back within 2^18 keys when one asks to join; docs/FORMAT.md); every
    other kind admits one writer at a time, and a second one waits for the
    writer lock, up to ``timeout`` seconds (None: for ever; 0: not at all),
    then raises :class:`~bloomkit.FileInUseError`.  Opening costs O(1): the lengths are
    checked against the file size, the checksum is not read
    (``verify=True`` checks it and the structure first, or call
    :func:`verify` later).  A file left DIRTY by a killed writer opens; the
    first writer to join it recounts it.  Close with :func:`close` (or
    ``f.close()``, or a ``with`` block).

    ``max_bytes`` refuses larger files.  Without it, a sparse file larger
    than :data:`SPARSE_MAX_BYTES` is refused (:class:`~bloomkit.SizeLimitError`)
    when a full pass would follow ("r+": ``close()`` reseals, i.e. reads the
    whole payload; ``verify=True``); pass ``max_bytes`` to accept it.
    """
    if mode not in ("r", "r+"):
        raise ValueError(f"mode must be 'r' or 'r+', not {mode!r}")
    if timeout is not None and not timeout >= 0:
        raise ValueError(f"timeout must be None or >= 0, not {timeout!r}")
    spath = os.fspath(path)
    for _attempt in range(8):
        opened = _open_once(spath, mode, secret, key, verify, max_bytes, timeout)
        if opened is not None:
            return opened
    raise FileInUseError(f"{spath}: in use: replaced by other processes 8 times while opening")


def _open_once(
    spath: str,
    mode: str,
    secret: bytes | None,
    key: Any,
    verify: bool,
    max_bytes: int | None,
    timeout: float | None,
) -> Any:
    """One attempt of :func:`open`; None when the path was replaced while
    this writer waited to join (the caller opens the new file)."""
    writable = mode == "r+"
    fd = os.open(spath, (os.O_RDWR if writable else os.O_RDONLY) | getattr(os, "O_CLOEXEC", 0))
    exclusive = False
    try:
        # Everything that can refuse the file runs before this process joins
        # the writers (issue 23.2): size, kind, mapping, secret.
        size, header = _size_check(spath, fd, max_bytes, full_pass=writable or verify)
        cls = _class_for(header)
        mm = _map(spath, fd, size, writable)
        obj = None
        try:
            if not writable:
                if verify:
                    with _locking.stable(fd, spath) as live:
                        if live:
                            raise _locking.in_use_error(spath, "a writer has it open 'r+'")
                        _check_bytes(mm, spath)
                obj = cls._from_buffer(mm, secret, key, writable=False, shared=False,
                                       allow_dirty=True)
            else:
                obj = cls._from_buffer(mm, secret, key, writable=True, shared=True,
                                       allow_dirty=True)
                exclusive = not _locking.shared_writers(cls)
                if exclusive:
                    mine = _already_writing(fd)
                    if mine is not None:
                        raise _locking.in_use_error(
                            spath, f"this process has it open 'r+' already (as {mine!r}); a "
                            f"{cls.__name__} admits one writer at a time")
                o, m = obj, mm
                if not _locking.join(
                    fd, spath, exclusive=exclusive, timeout=timeout,
                    joined=lambda alone: _joined(o, m, spath, alone, verify),
                ):
                    obj._detach()
                    obj = None
                    mm.close()
                    os.close(fd)
                    return None
                _hold_file(obj, fd, exclusive)
        except BaseException:
            if obj is not None:
                obj._detach()
            del obj
            mm.close()
            raise
    except BaseException:
        os.close(fd)
        raise
    _register(obj, _Mapping(spath, mode, fd, mm, exclusive))
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
    ``secret=``, ...).  The file is DIRTY until closed.  Replacing a file
    that writers have open raises :class:`~bloomkit.FileInUseError`.
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
    _core.set_dirty(head, True)

    # The descriptor that writes the temporary file stays open past the
    # rename: it holds the writer's lock (taken before the file is visible)
    # and backs the map.
    spath = os.fspath(path)
    _clean_stale_temporaries(spath)
    tmp, fd = _create_temp(spath, os.O_RDWR)
    exclusive = not _locking.shared_writers(cls)
    try:
        if sys.platform != "win32":
            fcntl.flock(fd, fcntl.LOCK_SH)  # the temporary's liveness lock, shared from now
        _locking.join(fd, tmp, exclusive=exclusive, timeout=0, joined=lambda alone: None)
        _write_all(fd, bytes(head))
        os.ftruncate(fd, total)
        os.fsync(fd)
        with _locking.replacing(spath):  # refused while writers have it open
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
    _hold_file(obj, fd, exclusive)
    _register(obj, _Mapping(spath, "r+", fd, mm, exclusive))
    return obj


def _forked() -> None:
    """After a fork, in parent and child: the two share every open file
    description, writer locks included, so neither could tell whether the
    other writes a file it holds "alone": every Bloom writer forgets its
    lock descriptor for good (its batches OR atomically from now on)."""
    for rec in list(_OPEN.values()):
        obj = rec.ref() if rec.ref is not None else None
        hold = getattr(obj, "_hold_file", None)
        if hold is not None and rec.mode == "r+":
            hold(None)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_parent=_forked, after_in_child=_forked)


def _hold_file(obj: Any, fd: int, exclusive: bool) -> None:
    """Give a joined atomic-OR writer (Bloom) its lock descriptor, so that its
    large batches may hold the file alone and OR with plain stores while no
    other process writes it (bloomkit/_locking.py, WAITING)."""
    hold = getattr(obj, "_hold_file", None)
    if hold is not None and not exclusive and _locking.HAVE_OFD:
        hold(fd)


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
    twice, or closing an in-memory object, does nothing.  A writer whose
    file was replaced or deleted by another program meanwhile (bloomkit's
    own replacers refuse) warns with a RuntimeWarning: its adds went to the
    old file.
    """
    rec = _pop_mapping(obj)
    if rec is None:
        return
    try:
        # Detach first (it waits for the object's GIL-free batches), then
        # seal the map's bytes: from the detach on, no thread of this process
        # can write the map, so the checksum stays current.  (Sealing through
        # the object and then detaching let a thread add in between: a
        # closed, clean file with a stale checksum, R30/R31.)
        obj._detach()
        if rec.mode == "r+":
            def sealed(last: bool) -> None:
                _seal_map(rec.mm, clean=last)
                rec.mm.flush()

            _locking.leave(rec.fd, exclusive=rec.exclusive, sealed=sealed)
            if not _locking.same_file(rec.fd, rec.path):
                warnings.warn(
                    f"bloomkit: {rec.path!r} was replaced or deleted by another program while "
                    "it was open 'r+': the adds of this writer went to the old file",
                    RuntimeWarning,
                    stacklevel=2,
                )
    finally:
        try:
            obj._detach()  # already done, unless the first call failed
            rec.mm.close()
        finally:
            os.close(rec.fd)


def verify(target: Any, *, max_bytes: int | None = None) -> dict[str, Any]:
    """Check a file, a mapped object or an in-memory object completely.

    Runs the checksum and the deep (O(payload)) validation.  Returns the
    header as a dict when everything is sound; raises
    :class:`~bloomkit.FileInUseError` for a file a writer has open now (its
    live state is not examined, and never called corrupt),
    :class:`~bloomkit.UncleanFileError` for a file left marked open by a
    killed writer (``bloomkit repair`` fixes it),
    :class:`~bloomkit.UnsupportedFormatError` for a version or kind this
    bloomkit cannot read, and :class:`~bloomkit.FormatError` (or its
    :class:`~bloomkit.ChecksumError`) for corrupt data.  No writer joins or
    leaves the file while it is checked.

    For a path, ``max_bytes`` refuses larger files before reading; without
    it a sparse file over :data:`SPARSE_MAX_BYTES` is refused (see
    :func:`open`).

    On an object this process has open "r+", ``verify()`` flushes first and
    checks the checksum it just wrote; the DIRTY mark it holds itself does
    not count as unclean.  For an atomic-OR kind (Bloom, counting Bloom,
    count-min) other writers may be adding meanwhile: a checksum that
    changed under it is then :class:`~bloomkit.FileInUseError`.
    """
    if isinstance(target, (str, os.PathLike)):
        spath = os.fspath(target)
        fd = os.open(spath, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            size, _ = _size_check(spath, fd, max_bytes, full_pass=True)
            with _locking.stable(fd, spath) as live:
                if live:
                    raise _locking.in_use_error(spath, "a writer has it open 'r+'")
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
        with _locking.stable(rec.fd, rec.path) as live:
            if live:
                raise _locking.in_use_error(rec.path, "a writer has it open 'r+'")
            return _check_bytes(rec.mm, rec.path)
    flush(target)
    _core.validate(_buf(rec.mm), checksum=False, allow_dirty=True)
    if _core.checksum(_buf(rec.mm)) != _core.peek_header(_buf(rec.mm))["checksum"]:
        raise _locking.in_use_error(
            rec.path, "the checksum changed while it was being written (other writers are "
            "adding)")
    return _core.validate(_buf(rec.mm), checksum=True, allow_dirty=True)


def repair(
    path: PathLike,
    *,
    secret: bytes | None = None,
    key: Any = None,
    max_bytes: int | None = None,
) -> dict[str, Any]:
    """Make a file left DIRTY by a killed writer clean again.

    With no writer in (else :class:`~bloomkit.FileInUseError`: the last
    writer clears DIRTY when it closes), checks the structure (a
    :class:`~bloomkit.FormatError` if the killed writer left it broken),
    recounts (see :func:`open`), reseals and clears DIRTY.  A clean file is
    only verified.  Returns ``{"path", "kind", "was_dirty", "count_before",
    "count_after"}`` (counts are None for kinds without ``len()``).
    ``secret`` is needed for keyed files; ``max_bytes`` as for :func:`verify`.
    ``bloomkit repair FILE`` is the command line form.
    """
    spath = os.fspath(path)
    fd = os.open(spath, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
    try:
        size, header = _size_check(spath, fd, max_bytes, full_pass=True)
        cls = _class_for(header)
        with _locking.exclusive_repair(fd, spath):
            mm = _map(spath, fd, size, True)
            obj = None
            try:
                was_dirty = bool(_core.peek_header(_buf(mm))["flags"] & FLAG_DIRTY)
                if not was_dirty:
                    _check_bytes(mm, spath)
                obj = cls._from_buffer(mm, secret, key, writable=True, shared=False,
                                       allow_dirty=True)
                before = _len_or_none(obj)
                if was_dirty:
                    _recount(obj)
                    try:  # the structure itself, now that the counts are current
                        _core.validate(_buf(mm), checksum=False, allow_dirty=True)
                    except FormatError as exc:
                        raise FormatError(
                            f"{spath}: corrupt: the killed writer left the structure broken "
                            f"({exc}); it cannot be repaired: rebuild it from its keys"
                        ) from None
                    obj._seal()
                    obj._set_dirty(False)
                    mm.flush()
                after = _len_or_none(obj)
            finally:
                if obj is not None:
                    obj._detach()
                del obj
                mm.close()
    finally:
        os.close(fd)
    return {"path": spath, "kind": header["kind_name"], "was_dirty": was_dirty,
            "count_before": before, "count_after": after}


def _len_or_none(obj: Any) -> int | None:
    try:
        return len(obj)
    except TypeError:
        return None


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
    a mapped object on exit).  Every bloomkit class inherits it (see
    :func:`register_kind`).

    Each subclass gets its own descriptors for its C base's public methods
    (``_core.own_methods``): CPython specialises ``f.add(k)`` only when the
    instance's type is exactly the method's class, so without them every
    call on a public class took the generic path (issue #21).
    """

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _core.own_methods(cls)

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
        max_bytes: int | None = None,
        timeout: float | None = None,
    ) -> _T:
        """Memory-map a file holding this class (see :func:`bloomkit.open`)."""
        obj = open(path, mode, secret=secret, key=key, verify=verify, max_bytes=max_bytes,
                   timeout=timeout)
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
