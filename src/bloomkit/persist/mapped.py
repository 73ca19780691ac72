"""Memory-mapped files: ``open``, ``create``, ``flush`` and ``close``.

``open`` maps a saved file in O(1) and returns the ordinary structure
object working in place on the map; ``create`` makes a new mapped file
without building the structure in memory.  Writers join and leave through
bloomkit/_locking.py; the package's docstring (bloomkit.persist) has the
design.
"""

from __future__ import annotations

import atexit
import mmap
import os
import struct
import sys
import warnings
from typing import Any

from .. import _core, _locking
from ..errors import FileInUseError, FormatError
from .atomic import fsync_dir, write_all
from .checks import check_bytes, check_file, unclean_error
from .kinds import FIXED_HEADER, FLAG_DIRTY, KINDS, OFF_PAYLOAD_LEN, PathLike, class_for
from .registry import (
    OPEN,
    OPEN_LOCK,
    Mapping,
    already_writing,
    as_buffer,
    mapping_of,
    pop_mapping,
    register_mapping,
    seal_map,
)
from .temps import clean_stale_temporaries, create_temp

if sys.platform != "win32":
    import fcntl


def map_file(path: str, fd: int, size: int, writable: bool) -> mmap.mmap:
    access = mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ
    return mmap.mmap(fd, size, access=access)


def mark_dirty(obj: Any, mm: mmap.mmap) -> None:
    obj._set_dirty(True)
    mm.flush(0, min(len(mm), mmap.PAGESIZE))  # on disk before the first add


def recount_stale(obj: Any) -> None:
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


def join_checked(obj: Any, mm: mmap.mmap, path: str, alone: bool, verify: bool) -> None:
    """Run holding the gate, just after joining the writers: check, repair a
    stale DIRTY mark, then mark the file DIRTY for this writer."""
    dirty = bool(_core.peek_header(as_buffer(mm))["flags"] & FLAG_DIRTY)
    if verify:
        if dirty and alone:
            raise unclean_error(path)
        # with other writers in (atomic-OR kinds only) the checksum is stale
        _core.validate(as_buffer(mm), checksum=not dirty, allow_dirty=True)
    elif dirty and alone:
        recount_stale(obj)  # a writer was killed: no one else is in
    mark_dirty(obj, mm)


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
        size, header = check_file(spath, fd, max_bytes, full_pass=writable or verify)
        cls = class_for(header)
        mm = map_file(spath, fd, size, writable)
        obj = None
        try:
            if not writable:
                if verify:
                    with _locking.stable(fd, spath) as live:
                        if live:
                            raise _locking.in_use_error(spath, "a writer has it open 'r+'")
                        check_bytes(mm, spath)
                obj = cls._from_buffer(mm, secret, key, writable=False, shared=False,
                                       allow_dirty=True)
            else:
                obj = cls._from_buffer(mm, secret, key, writable=True, shared=True,
                                       allow_dirty=True)
                exclusive = not _locking.shared_writers(cls)
                if exclusive:
                    mine = already_writing(fd)
                    if mine is not None:
                        raise _locking.in_use_error(
                            spath, f"this process has it open 'r+' already (as {mine!r}); a "
                            f"{cls.__name__} admits one writer at a time")
                o, m = obj, mm
                if not _locking.join(
                    fd, spath, exclusive=exclusive, timeout=timeout,
                    joined=lambda alone: join_checked(o, m, spath, alone, verify),
                ):
                    obj._detach()
                    obj = None
                    mm.close()
                    os.close(fd)
                    return None
                hold_file(obj, fd, exclusive)
        except BaseException:
            if obj is not None:
                obj._detach()
            del obj
            mm.close()
            raise
    except BaseException:
        os.close(fd)
        raise
    register_mapping(obj, Mapping(spath, mode, fd, mm, exclusive))
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
    cls = kind if kind is not None else KINDS[1]
    maker = getattr(cls, "_create_header", None)
    if maker is None:
        raise TypeError(f"{getattr(cls, '__name__', cls)!r} cannot be created as a mapped file")
    head = bytearray(maker(capacity, error_rate, **params))
    if len(head) < FIXED_HEADER:
        raise FormatError("internal error: a created header is shorter than 64 bytes")
    (payload_len,) = struct.unpack_from("<Q", head, OFF_PAYLOAD_LEN)
    total = len(head) + payload_len
    header = _core.peek_header(bytes(head[:FIXED_HEADER]), total)
    if header["header_len"] != len(head):
        raise FormatError("internal error: a created header does not match its header_len")
    _core.set_dirty(head, True)

    # The descriptor that writes the temporary file stays open past the
    # rename: it holds the writer's lock (taken before the file is visible)
    # and backs the map.
    spath = os.fspath(path)
    clean_stale_temporaries(spath)
    tmp, fd = create_temp(spath, os.O_RDWR)
    exclusive = not _locking.shared_writers(cls)
    try:
        if sys.platform != "win32":
            fcntl.flock(fd, fcntl.LOCK_SH)  # the temporary's liveness lock, shared from now
        _locking.join(fd, tmp, exclusive=exclusive, timeout=0, joined=lambda alone: None)
        write_all(fd, bytes(head))
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
    fsync_dir(os.path.dirname(os.path.abspath(spath)))
    try:
        mm = map_file(spath, fd, total, True)
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
    hold_file(obj, fd, exclusive)
    register_mapping(obj, Mapping(spath, "r+", fd, mm, exclusive))
    return obj


def hold_file(obj: Any, fd: int, exclusive: bool) -> None:
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
    rec = mapping_of(obj)
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
    rec = pop_mapping(obj)
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
                seal_map(rec.mm, clean=last)
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


@atexit.register
def _close_all() -> None:
    with OPEN_LOCK:
        recs = list(OPEN.values())
    for rec in recs:
        obj = rec.ref() if rec.ref is not None else None
        if obj is not None:
            try:
                close(obj)
            except Exception:
                pass
