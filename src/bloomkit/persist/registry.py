"""The registry of mapped objects, and the fork hook.

A mapped object is the ordinary structure object; what it needs besides its
C state -- the file descriptor, the map, the mode, whether it holds the
writer lock alone -- is kept here, keyed by the object's identity and
cleared by a weak reference when the object dies (an "r+" object dropped
without ``close()`` is sealed then, with a ResourceWarning).  After a fork,
parent and child share every open file description, writer locks included:
the hook at the end makes every Bloom writer forget its lock descriptor.
"""

from __future__ import annotations

import mmap
import os
import threading
import warnings
import weakref
from typing import Any

from .. import _core, _locking


class Mapping:
    """What a mapped object needs besides its C state: the file and the map."""

    __slots__ = ("exclusive", "fd", "mm", "mode", "path", "ref")

    def __init__(self, path: str, mode: str, fd: int, mm: mmap.mmap, exclusive: bool) -> None:
        self.path = path
        self.mode = mode
        self.fd = fd
        self.mm = mm
        self.exclusive = exclusive  # holds the writer lock alone (not an atomic-OR kind)
        self.ref: weakref.ref[Any] | None = None


OPEN: dict[int, Mapping] = {}
OPEN_LOCK = threading.Lock()


def register_mapping(obj: Any, rec: Mapping) -> None:
    key = id(obj)

    def _gone(_ref: weakref.ref[Any], key: int = key) -> None:
        with OPEN_LOCK:
            dead = OPEN.get(key)
            if dead is None or dead.ref is not _ref:
                return
            del OPEN[key]
        _finalize_dead(dead)

    rec.ref = weakref.ref(obj, _gone)
    with OPEN_LOCK:
        OPEN[key] = rec


def mapping_of(obj: Any) -> Mapping | None:
    with OPEN_LOCK:
        rec = OPEN.get(id(obj))
    if rec is None or rec.ref is None or rec.ref() is not obj:
        return None
    return rec


def pop_mapping(obj: Any) -> Mapping | None:
    with OPEN_LOCK:
        rec = OPEN.get(id(obj))
        if rec is None or rec.ref is None or rec.ref() is not obj:
            return None
        del OPEN[id(obj)]
    return rec


def _finalize_dead(rec: Mapping) -> None:
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
                seal_map(rec.mm, clean=last)
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


def seal_map(mm: mmap.mmap, clean: bool) -> None:
    """Seal a map at the byte level: the checksum made current, and DIRTY
    cleared when ``clean`` (the last writer)."""
    _core.seal(as_buffer(mm))
    if clean:
        _core.set_dirty(as_buffer(mm), False)


def as_buffer(mm: mmap.mmap) -> Any:
    """An mmap as the bytes-like argument of the _core helpers (typing only)."""
    return mm


def already_writing(fd: int) -> str | None:
    """The path under which this process has the file on ``fd`` open "r+"
    for a kind that admits one writer (a second writer here would wait for
    itself for ever), else None."""
    st = os.fstat(fd)
    with OPEN_LOCK:
        recs = list(OPEN.values())
    for rec in recs:
        if rec.mode == "r+" and rec.exclusive:
            try:
                other = os.fstat(rec.fd)
            except OSError:
                continue
            if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                return rec.path
    return None


def _forked() -> None:
    """After a fork, in parent and child: the two share every open file
    description, writer locks included, so neither could tell whether the
    other writes a file it holds "alone": every Bloom writer forgets its
    lock descriptor for good (its batches OR atomically from now on)."""
    for rec in list(OPEN.values()):
        obj = rec.ref() if rec.ref is not None else None
        hold = getattr(obj, "_hold_file", None)
        if hold is not None and rec.mode == "r+":
            hold(None)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_parent=_forked, after_in_child=_forked)
