"""What is checked before a file is read in full, and after.

Size limits on sparse files (below), the header read against the real file
size before anything is mapped (:func:`check_file`), and the full
validation of a state buffer with the DIRTY rule (:func:`check_bytes`).

A full pass over a file (verify, open(verify=True), the seal of an "r+"
writer's close(), load) costs time in proportion to its declared size:
~1 s per GiB from the page cache, holes of a sparse file included.  A
4 KiB sparse file declaring 1 TiB would keep one busy for 20-45 minutes
(R16, R33).  So, unless the caller gives max_bytes:

- a *sparse* file (less than 1/16 of its size allocated on disk) larger
  than SPARSE_MAX_BYTES is refused with SizeLimitError before any work
  where a full pass would follow; ``open(path, "r")`` without verify
  (O(1), pages read on demand) is not affected;
- a dense file is not limited (its bytes exist: the work matches them).

An explicit max_bytes is the limit for every file, sparse or not.
16 GiB: the largest pass that still ends in well under a minute (16 GiB
measured 17 s for verify), above a 10^10-key filter at 1% (11.2 GiB).  A
file made by create() and still mostly empty is sparse too: past 16 GiB,
reopen it with max_bytes=<its size>.  A compressing file system (ZFS,
btrfs) can make an almost empty filter look sparse the same way.
"""

from __future__ import annotations

import os
from typing import Any

from .. import _core
from ..errors import FormatError, SizeLimitError, UncleanFileError
from .kinds import FIXED_HEADER

SPARSE_MAX_BYTES = 16 * 2**30
_SPARSE_RATIO = 16


def human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024 or unit == "PiB":
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def allocated(st: os.stat_result) -> int | None:
    blocks = getattr(st, "st_blocks", None)
    return None if blocks is None else int(blocks) * 512


def is_sparse(st: os.stat_result) -> bool:
    alloc = allocated(st)
    return alloc is not None and alloc * _SPARSE_RATIO < st.st_size


def check_size(path: str, st: os.stat_result, max_bytes: int | None, full_pass: bool) -> None:
    """Refuse, before any work, a file over ``max_bytes`` or (when a full
    pass follows and no max_bytes is given) a sparse one over
    SPARSE_MAX_BYTES."""
    size = st.st_size
    if max_bytes is not None:
        if size > max_bytes:
            sparse = (
                f"; it is sparse: only {human(allocated(st) or 0)} on disk"
                if is_sparse(st) else ""
            )
            raise SizeLimitError(
                f"{path}: {size} bytes ({human(size)}), over max_bytes={max_bytes}{sparse}; "
                f"pass max_bytes={size} (CLI: --max-bytes {size}) to accept it"
            )
        return
    if full_pass and size > SPARSE_MAX_BYTES and is_sparse(st):
        alloc = allocated(st) or 0
        raise SizeLimitError(
            f"{path}: sparse file: declares {size} bytes ({human(size)}) but only "
            f"{human(alloc)} is on disk, and a full pass would read all of it (holes as zeros, "
            f"~1 s per GiB); refused over {human(SPARSE_MAX_BYTES)}.  If it is yours (e.g. made "
            f"by bloomkit.create()), pass max_bytes={size} (CLI: --max-bytes {size})"
        )


def check_file(
    path: str, fd: int, max_bytes: int | None, full_pass: bool = False
) -> tuple[int, dict[str, Any]]:
    st = os.fstat(fd)
    size = st.st_size
    check_size(path, st, max_bytes, full_pass)
    head = os.pread(fd, FIXED_HEADER, 0)
    if size < FIXED_HEADER:
        _core.peek_header(head)  # bad magic first: "not a bloomkit file" beats "truncated"
        raise FormatError(
            f"{path}: {size} bytes, shorter than the 64-byte bloomkit header (truncated)"
        )
    # The declared lengths are checked against the real file size before
    # anything is mapped: a short file is a FormatError, never a SIGBUS.
    header = _core.peek_header(head, size)
    return size, header


def check_bytes(buf: Any, where: str) -> dict[str, Any]:
    """Full verification of a state buffer by the one validator, which holds
    the DIRTY rule: structure, then DIRTY, then the checksum.  A DIRTY state
    (its writer was killed: callers make sure no writer is in) that passes
    the O(1) checks is unclean, not corrupt: its checksum is stale and its
    counts may lag the payload until :func:`repair` recounts it and runs the
    deep checks."""
    try:
        result: dict[str, Any] = _core.validate(buf, checksum=True)
    except UncleanFileError:
        raise unclean_error(where) from None
    return result


def unclean_error(where: str) -> UncleanFileError:
    return UncleanFileError(
        f"{where}: unclean: marked open for writing by a writer that is gone (killed before "
        "close()); its checksum is not current.  Keys added before the writer's last flush() "
        f"are present; run `bloomkit repair {where}` (or bloomkit.repair(path)) to recount "
        "and reseal it"
    )
