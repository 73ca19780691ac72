"""``verify`` (checksum and deep validation of a file, a mapped object or an
in-memory object) and ``repair`` (recount and reseal a file left DIRTY by a
killed writer).
"""

from __future__ import annotations

import os
from typing import Any

from .. import _core, _locking
from ..errors import FormatError
from .checks import check_bytes, check_file
from .kinds import FLAG_DIRTY, PathLike, class_for
from .mapped import flush, map_file, recount_stale
from .registry import as_buffer, mapping_of


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
            size, _ = check_file(spath, fd, max_bytes, full_pass=True)
            with _locking.stable(fd, spath) as live:
                if live:
                    raise _locking.in_use_error(spath, "a writer has it open 'r+'")
                mm = map_file(spath, fd, size, False)
                try:
                    return check_bytes(mm, spath)
                finally:
                    mm.close()
        finally:
            os.close(fd)
    rec = mapping_of(target)
    if rec is None:
        if getattr(target, "mapped", False):
            raise ValueError("this mapped object was not opened by bloomkit.open() or was closed")
        return check_bytes(target.to_bytes(), repr(type(target).__name__))
    if rec.mode == "r":
        with _locking.stable(rec.fd, rec.path) as live:
            if live:
                raise _locking.in_use_error(rec.path, "a writer has it open 'r+'")
            return check_bytes(rec.mm, rec.path)
    flush(target)
    _core.validate(as_buffer(rec.mm), checksum=False, allow_dirty=True)
    if _core.checksum(as_buffer(rec.mm)) != _core.peek_header(as_buffer(rec.mm))["checksum"]:
        raise _locking.in_use_error(
            rec.path, "the checksum changed while it was being written (other writers are "
            "adding)")
    return _core.validate(as_buffer(rec.mm), checksum=True, allow_dirty=True)


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
        size, header = check_file(spath, fd, max_bytes, full_pass=True)
        cls = class_for(header)
        with _locking.exclusive_repair(fd, spath):
            mm = map_file(spath, fd, size, True)
            obj = None
            try:
                was_dirty = bool(_core.peek_header(as_buffer(mm))["flags"] & FLAG_DIRTY)
                if not was_dirty:
                    check_bytes(mm, spath)
                obj = cls._from_buffer(mm, secret, key, writable=True, shared=False,
                                       allow_dirty=True)
                before = _len_or_none(obj)
                if was_dirty:
                    recount_stale(obj)
                    try:  # the structure itself, now that the counts are current
                        _core.validate(as_buffer(mm), checksum=False, allow_dirty=True)
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
