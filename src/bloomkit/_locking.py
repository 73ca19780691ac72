"""Who may write a mapped file, and who sets and clears its DIRTY flag.

This module is the lock protocol of docs/FORMAT.md ("Writers and the DIRTY
flag"); bloomkit/persist/ calls it at every step where a process joins or leaves
the writers of a file, reads a state that must not be moving, or replaces
a path.  It knows nothing about structures: callers pass callbacks.

The locks
---------
Two open-file-description (OFD) record locks on one byte each, held on the
data file itself (Linux ``F_OFD_SETLK``; no byte of data is locked, the
ranges only name two independent locks):

  GATE    (byte 0)  held exclusively for the short moment a writer joins or
                    leaves (and by ``repair``); held shared by anyone who
                    must see a state that no writer can join or leave
                    (verify, load, open with verify=True, a replacer).
  WRITERS (byte 1)  held by every writer from join to leave: shared by the
                    kinds whose in-place updates are single atomic ORs or
                    increments (Bloom, counting Bloom, count-min), exclusive
                    by every other kind (cuckoo, quotient, TinyLFU, and any
                    future kind unless its descriptor says writer_lock "shared").
                    A Bloom writer's large ``add_many`` batch converts its
                    shared WRITERS to exclusive without waiting when it can
                    (no other writer in, nobody waiting), ORs with plain
                    stores, and converts back when the batch ends: a
                    conversion, not a join or a leave, so GATE is not taken.
  WAITING (byte 2)  held shared by a joiner of those kinds while WRITERS is
                    exclusive (a batch holds the file alone): the batch
                    looks for it every 2^18 keys and hands the file back
                    (py_common.h, bkpy_state_hold_file).

The invariant that makes every interleaving safe: **WRITERS is taken and
released only while GATE is held exclusively.**  So a process holding GATE
(shared or exclusive) sees in WRITERS exactly the writers that have joined
and not left:

- A leaving writer takes GATE, seals, and asks for WRITERS exclusively
  without waiting: granted means no other writer, so it clears DIRTY.  An
  opener that fails (bad secret, wrong kind, verify=True on a DIRTY file)
  fails before it touches WRITERS, or under GATE, releasing WRITERS before
  GATE: no leaving writer can mistake it for a live writer (issue 23.2).
- A joining writer takes GATE, then WRITERS without waiting.  When WRITERS
  is busy (an exclusive writer is in), it releases GATE, sleeps and tries
  again, up to ``timeout``: it never waits for WRITERS while holding GATE,
  so the writer it waits for can always leave.  Having joined alone, it
  finds a DIRTY mark stale (a writer was killed: the kernel released its
  locks) and repairs the state before marking it DIRTY for itself.
- A reader that must not see a moving state (verify) holds GATE shared: no
  writer can join or leave meanwhile; if WRITERS is held, the file is in
  use (:class:`FileInUseError`, exit 5) and is not examined further.
- A replacer (save, create, ``build -o``, ``merge -o``) holds GATE shared
  on the old file while it checks WRITERS and renames: a live writer makes
  it fail; a writer that was waiting to join finds, once it has GATE, that
  the path names another file and opens the new one instead.

A process killed at any point loses all its locks at once (one unlock of
the whole description), so a crash can leave DIRTY set but never a lock.

Platforms without OFD locks (macOS, the BSDs) fall back to ``flock`` on the
whole file for WRITERS and no GATE: exclusion of writers still holds, but a
failing opener can then leave DIRTY set for the next writer to repair, and
verify cannot tell "in use" from "crashed".  Windows has no locks at all:
one writer per file is assumed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import struct
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from . import _descriptor
from .errors import FileInUseError

GATE = 0
WRITERS = 1
WAITING = 2

# A joiner of an atomic-OR kind refused WRITERS is waiting for a batch
# that holds the file alone, which hands it back within 2^18 keys of seeing
# WAITING: such a joiner waits for that whatever its ``timeout``, up to this.
_HANDOVER_MAX = 30.0

# Polling a busy WRITERS lock: start at 2 ms, double up to 50 ms (a waiting
# writer costs about 20 wake-ups a second and starts at most 50 ms late).
_POLL_MIN = 0.002
_POLL_MAX = 0.05

_SH = "sh"
_EX = "ex"
# errors that mean "this file cannot be locked at all" (readers go on
# without the guarantee; writers fail)
_NO_LOCKS = (errno.ENOLCK, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF)

if sys.platform == "win32":  # pragma: no cover
    _fcntl: Any = None
    HAVE_OFD = False
else:
    import fcntl as _fcntl

    HAVE_OFD = hasattr(_fcntl, "F_OFD_SETLK")

# struct flock: short l_type, short l_whence, off_t l_start, off_t l_len,
# pid_t l_pid (native alignment, padded to a multiple of 8 bytes; l_pid
# must be 0 for OFD locks).
_FLOCK = "@hhqqi"
_FLOCK_PAD = (-struct.calcsize(_FLOCK)) % 8


def shared_writers(cls: type[Any]) -> bool:
    """True when ``cls``'s in-place updates are single atomic operations, so
    that several processes may write one file at once: its kind descriptor's
    writer_lock is "shared" (bk_kind.h, BK_TRAIT_SHARED_WRITERS)."""
    kind = _descriptor.of(cls)
    return kind is not None and kind.writer_lock == "shared"


# ---- Begin logic for the lock primitives ----------------------------------


def _flock_struct(ltype: int, start: int, length: int) -> bytes:
    return struct.pack(_FLOCK, ltype, os.SEEK_SET, start, length, 0) + b"\0" * _FLOCK_PAD


def _ofd(fd: int, cmd: int, ltype: int, start: int, length: int = 1) -> bytes:
    out: bytes = _fcntl.fcntl(fd, cmd, _flock_struct(ltype, start, length))
    return out


def _try(fd: int, rng: int, mode: str) -> bool:
    """Take (or convert to) ``mode`` on ``rng`` without waiting.  A refused
    conversion leaves the lock held as it was (POSIX record locks)."""
    if not HAVE_OFD:
        return _flock_try(fd, mode) if rng == WRITERS else True
    ltype = _fcntl.F_WRLCK if mode == _EX else _fcntl.F_RDLCK
    try:
        _ofd(fd, _fcntl.F_OFD_SETLK, ltype, rng)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def _wait(fd: int, rng: int, mode: str) -> None:
    if not HAVE_OFD:
        if rng == WRITERS:
            _fcntl.flock(fd, _fcntl.LOCK_EX if mode == _EX else _fcntl.LOCK_SH)
        return
    ltype = _fcntl.F_WRLCK if mode == _EX else _fcntl.F_RDLCK
    _ofd(fd, _fcntl.F_OFD_SETLKW, ltype, rng)


def _release_all(fd: int) -> None:
    """Drop every lock in one call (atomically, like a crash would)."""
    if _fcntl is None:  # pragma: no cover
        return
    if HAVE_OFD:
        _ofd(fd, _fcntl.F_OFD_SETLK, _fcntl.F_UNLCK, 0, 3)  # GATE, WRITERS, WAITING
    else:
        _fcntl.flock(fd, _fcntl.LOCK_UN)


def _held_by_others(fd: int, rng: int) -> bool:
    """Does another open file description hold ``rng`` (in any mode)?"""
    if not HAVE_OFD:
        return False  # flock cannot be probed without taking it
    out = _ofd(fd, _fcntl.F_OFD_GETLK, _fcntl.F_WRLCK, rng)
    (ltype,) = struct.unpack_from("@h", out)
    return bool(ltype != _fcntl.F_UNLCK)


def _flock_try(fd: int, mode: str) -> bool:  # pragma: no cover - non-Linux fallback
    if _fcntl is None:
        return True
    try:
        _fcntl.flock(fd, (_fcntl.LOCK_EX if mode == _EX else _fcntl.LOCK_SH) | _fcntl.LOCK_NB)
    except OSError:
        return False
    return True


# ---- End logic for the lock primitives ------------------------------------

# ---- Begin logic for the protocol steps -------------------------------------


def same_file(fd: int, path: str) -> bool:
    """Does ``path`` still name the file open on ``fd``?"""
    try:
        a = os.fstat(fd)
        b = os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def in_use_error(path: str, what: str) -> FileInUseError:
    return FileInUseError(
        f"{path}: in use: {what}; its state is live, not corrupt (retry when the writer "
        "has closed it)"
    )


def join(
    fd: int,
    path: str,
    *,
    exclusive: bool,
    timeout: float | None,
    joined: Callable[[bool], None],
) -> bool:
    """Join the writers of the file open on ``fd`` (opened read-write).

    Waits up to ``timeout`` seconds (None: for ever, 0: not at all) for
    WRITERS, then, holding GATE, calls ``joined(alone)`` where ``alone`` says
    that no other writer is in (so a DIRTY mark is stale).  ``joined`` marks
    the file DIRTY; if it raises, the process leaves again at once, under
    GATE.  Returns False, having taken nothing, when ``path`` no longer names
    the file (it was replaced while we waited): the caller reopens it.
    """
    try:
        return _join_loop(fd, path, exclusive, timeout, joined)
    finally:
        if HAVE_OFD and not exclusive:
            _ofd(fd, _fcntl.F_OFD_SETLK, _fcntl.F_UNLCK, WAITING)


def _join_loop(fd: int, path: str, exclusive: bool, timeout: float | None,
               joined: Callable[[bool], None]) -> bool:
    mode = _EX if exclusive else _SH
    start = time.monotonic()
    deadline = None if timeout is None else start + max(0.0, timeout)
    pause = _POLL_MIN
    while True:
        _wait(fd, GATE, _EX)
        done = False
        try:
            if not same_file(fd, path):
                return False
            if _try(fd, WRITERS, mode):
                # (without OFD locks a refused flock upgrade drops the lock:
                # only exclusive writers know they are alone there)
                alone = exclusive or (HAVE_OFD and _try(fd, WRITERS, _EX))
                joined(alone)
                if alone and not exclusive:
                    _try(fd, WRITERS, _SH)  # a downgrade is always granted
                done = True
                return True
        finally:
            if done:
                if HAVE_OFD:
                    _ofd(fd, _fcntl.F_OFD_SETLK, _fcntl.F_UNLCK, GATE)
            else:
                _release_all(fd)  # WRITERS before (with) GATE, never after
        # An atomic-OR kind's WRITERS is exclusive only while another
        # process's batch holds the file alone: ask it back, and wait for
        # the handover whatever the timeout.
        handover = not exclusive and HAVE_OFD and _try(fd, WAITING, _SH)
        now = time.monotonic()
        if deadline is not None and now >= deadline and (
                not handover or now - start >= _HANDOVER_MAX):
            what = "another process holds its writer lock"
            if handover:
                what += f" (waited {now - start:.3g} s for its batch to hand it back)"
            elif timeout:
                what += f" (waited {timeout:g} s)"
            raise in_use_error(path, what)
        if deadline is None or handover:
            time.sleep(pause)
        else:
            time.sleep(min(pause, max(0.0, deadline - now)))
        pause = min(pause * 2, _POLL_MAX)


def leave(fd: int, *, exclusive: bool, sealed: Callable[[bool], None],
          timeout: float | None = None) -> None:
    """Leave the writers: under GATE, call ``sealed(last)`` (seal, and clear
    DIRTY when ``last``), then drop every lock.  ``timeout`` bounds the wait
    for GATE (a finalizer must not wait for ever); when it runs out,
    ``sealed(False)`` runs without GATE and the next writer repairs DIRTY."""
    try:
        if timeout is None or not HAVE_OFD:
            _wait(fd, GATE, _EX)
            got = True
        else:
            got = _poll_gate(fd, timeout)
        last = got and (exclusive or _try(fd, WRITERS, _EX))
        sealed(last)
    finally:
        _release_all(fd)


def _poll_gate(fd: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    pause = _POLL_MIN
    while not _try(fd, GATE, _EX):
        if time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, _POLL_MAX)
    return True


@contextlib.contextmanager
def stable(fd: int, path: str) -> Iterator[bool]:
    """Hold GATE shared: no writer joins or leaves meanwhile.  Yields
    whether a writer is in (the state is then live and must not be judged).
    ``fd`` may be read-only."""
    if _fcntl is None:  # pragma: no cover
        yield False
        return
    try:
        _wait(fd, GATE, _SH)
    except OSError as exc:
        if exc.errno not in _NO_LOCKS:
            raise
        yield False  # not a lockable file (a pipe, a file system without locks)
        return
    try:
        yield _held_by_others(fd, WRITERS)
    finally:
        if HAVE_OFD:
            _ofd(fd, _fcntl.F_OFD_SETLK, _fcntl.F_UNLCK, GATE)


@contextlib.contextmanager
def exclusive_repair(fd: int, path: str) -> Iterator[None]:
    """Hold GATE and WRITERS exclusively (``repair``), or raise
    :class:`FileInUseError` at once when a writer is in."""
    _wait(fd, GATE, _EX)
    try:
        if not _try(fd, WRITERS, _EX):
            raise in_use_error(path, "a writer has it open 'r+' (its last writer clears the "
                                     "DIRTY mark when it closes; nothing to repair)")
        yield
    finally:
        _release_all(fd)


@contextlib.contextmanager
def replacing(path: str) -> Iterator[None]:
    """Around the rename of a new file over ``path``: refuse while writers
    have the old file open, and keep new writers out until the rename is
    done (they then open the new file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:  # no old file, or one we cannot read: nothing to protect
        yield
        return
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            yield
            return
        with stable(fd, path) as live:
            if live:
                raise in_use_error(path, "cannot replace it while a writer has it open 'r+' "
                                         "(its adds would go to the replaced file); close the "
                                         "writers first")
            yield
    finally:
        os.close(fd)


# ---- End logic for the protocol steps ---------------------------------------
