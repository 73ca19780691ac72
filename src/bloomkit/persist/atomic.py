"""Atomic files: ``save`` and ``load``.

A save writes a temporary file next to the target (temps.py names it and
cleans up after killed writers), fsyncs it, renames it over the target and
fsyncs the directory: a reader sees the old file or the new one, never a
mix.  ``load`` reads a whole file into memory through the one validator.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Callable
from typing import Any

from .. import _core, _locking
from ..errors import FileInUseError, UncleanFileError
from .checks import check_size, human, unclean_error
from .kinds import FIXED_HEADER, PathLike, class_for_kind, dumps
from .temps import clean_stale_temporaries, create_temp


def fsync_dir(directory: str) -> None:
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


def atomic_write(path: PathLike, write: Callable[[int], None]) -> None:
    """Create a temporary file next to ``path``, let ``write(fd)`` fill it,
    fsync it, rename it over ``path`` and fsync the directory.  On any
    failure the temporary file is removed and ``path`` is untouched.

    Temporaries left by killed writers of ``path`` are removed first (see
    "temporary files" below), so that repeated crashes cannot fill the disk
    with full-size copies."""
    path = os.fspath(path)
    clean_stale_temporaries(path)
    tmp, fd = create_temp(path, os.O_RDWR)  # RDWR: save() reads its header back to seal it
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
    fsync_dir(os.path.dirname(os.path.abspath(path)))


def write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view.nbytes:
        n = os.write(fd, view)
        view = view[n:]


def pwrite_all(fd: int, data: bytes, offset: int) -> None:
    if hasattr(os, "pwrite"):
        view = memoryview(data)
        while view.nbytes:
            n = os.pwrite(fd, view, offset)
            view, offset = view[n:], offset + n
    else:  # pragma: no cover - Windows
        end = os.lseek(fd, 0, os.SEEK_CUR)
        os.lseek(fd, offset, os.SEEK_SET)
        write_all(fd, data)
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
        atomic_write(path, lambda fd: write_all(fd, data))
        return

    def write(fd: int) -> None:
        checksum = writer(fd)  # header written with checksum 0, then the payload
        head = bytearray(os.pread(fd, FIXED_HEADER, 0))
        _core.seal(head, checksum)
        pwrite_all(fd, bytes(head), 0)

    atomic_write(path, write)


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
        check_size(spath, st, max_bytes, full_pass=True)
        # no writer joins or leaves while the bytes are read (a state read
        # while it moves would fail its checksum: "corrupt" for a live file)
        with _locking.stable(fh.fileno(), spath) as live:
            if live:
                raise _locking.in_use_error(spath, "a writer has it open 'r+'")
            try:
                return _core.load_fd(
                    fh.fileno(), st.st_size, class_for_kind, secret, key, verify=verify
                )
            except FileInUseError:
                raise
            except UncleanFileError:
                raise unclean_error(spath) from None
            except MemoryError:
                raise MemoryError(
                    f"cannot read {st.st_size} bytes ({human(st.st_size)}) of {spath} into "
                    "memory: use bloomkit.open(path) to map it instead, or free memory"
                ) from None
