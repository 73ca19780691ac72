"""Merging filter files in bounded memory (``bloomkit merge``, issue #19).

The union of Bloom filters is the bitwise OR of their payloads (the
intersection the AND), and the header stays the same but for the count and
the checksum.  So ``merge_bits`` never loads an input: it builds the output
state in one buffer the size of one filter and ORs every input into it
chunk by chunk, read with ``pread`` through a 16 MiB buffer.  Peak memory:
the output state plus one chunk, whatever the number and size of the
inputs (tests/test_merge_memory.py checks it with ``ru_maxrss`` in a
subprocess).

Each input is verified first (checksum and deep checks, streamed over a
read-only map that is dropped again before the next one: a map's resident
pages count in RSS while it is mapped), before the output exists, and the
inputs' GATE locks are held from their check until the end of the merge,
so no writer joins any of them between the check and the read
(bloomkit/_locking.py ``stable``).  The descriptors stay open, so a file
renamed over an input meanwhile is not the one read.

Kinds whose merge is not a bitwise operation on the payload (counting
Bloom, cuckoo, quotient, count-min) are merged by the CLI from the first
file loaded and every further one mapped read-only, merged in place where
the class can, then unmapped: peak memory the output plus one input map.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
from collections.abc import Callable, Sequence
from typing import Any

from . import _core, _descriptor, _domains, _locking, persist
from .errors import FormatError, IncompatibleFiltersError
from .persist import checks, kinds

CHUNK = 16 << 20
# header bytes that differ between compatible Bloom filters: flags (DIRTY),
# checksum, count (docs/FORMAT.md, "The container";
# docs/bloom.md, "File layout")
_VOLATILE = ((14, 16), (40, 48), (96, 104))


def merges_by_bits(cls: type[Any]) -> bool:
    """Kinds whose union and intersection are the payloads' OR and AND (their
    descriptor's ``bitwise`` trait): their files merge chunk by chunk here."""
    desc = _descriptor.of(cls)
    return desc is not None and desc.bitwise


def _masked(head: bytes) -> bytes:
    out = bytearray(head)
    for lo, hi in _VOLATILE:
        out[lo:hi] = bytes(hi - lo)
    return bytes(out)


def _or_into(dst: memoryview, src: memoryview, intersection: bool) -> None:
    """dst |= src (or &=) for equal-length byte views."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is optional: big ints do it too
        a = int.from_bytes(dst, "little")
        b = int.from_bytes(src, "little")
        dst[:] = ((a & b) if intersection else (a | b)).to_bytes(len(dst), "little")
        return
    d = np.frombuffer(dst, dtype=np.uint8)
    s = np.frombuffer(src, dtype=np.uint8)
    (np.bitwise_and if intersection else np.bitwise_or)(d, s, out=d)


def _pread_into(fd: int, view: memoryview, offset: int, path: str) -> None:
    while view.nbytes:
        n = os.preadv(fd, [view], offset)
        if n <= 0:
            raise FormatError(f"{path}: truncated while it was being merged")
        view, offset = view[n:], offset + n


def _check_input(stack: contextlib.ExitStack, path: str,
                 max_bytes: int | None) -> tuple[int, int, dict[str, Any]]:
    """Open, lock (GATE shared, until the stack closes) and fully verify one
    input; return (fd, size, header)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    stack.callback(os.close, fd)
    size, header = checks.check_file(path, fd, max_bytes, full_pass=True)
    if stack.enter_context(_locking.stable(fd, path)):
        raise _locking.in_use_error(path, "a writer has it open 'r+'")
    mm = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
    try:
        checks.check_bytes(mm, path)
    finally:
        mm.close()  # its pages leave this process's RSS here
    return fd, size, header


def merge_bits(paths: Sequence[str], intersection: bool = False,
               max_bytes: int | None = None,
               naming: Callable[[str], contextlib.AbstractContextManager[Any]] | None = None,
               secret: bytes | None = None) -> Any:
    """The union (intersection) of Bloom filter files, built in one state
    buffer; returns the in-memory filter (unsealed: ``save`` seals it).

    Incompatible inputs raise :class:`IncompatibleFiltersError` with the
    message the in-memory ``union`` gives, before the output is allocated.
    ``naming(path)`` wraps the checks of each input (the CLI re-raises an
    error there as one line naming the file)."""
    with contextlib.ExitStack() as stack:
        checked = []
        for p in paths:
            with naming(p) if naming is not None else contextlib.nullcontext():
                checked.append(_check_input(stack, p, max_bytes))
        fd0, size0, h0 = checked[0]
        head0 = os.pread(fd0, h0["header_len"], 0)
        for p, (fd, size, h) in zip(paths[1:], checked[1:], strict=True):
            head = os.pread(fd, h["header_len"], 0)
            if size != size0 or _masked(head) != _masked(head0):
                _explain_incompatible(paths[0], p, secret)
        cls = kinds.class_for(h0)
        out = bytearray(size0)  # calloc'd: pages arrive as they are written
        view = memoryview(out)
        _pread_into(fd0, view, 0, paths[0])
        hl = h0["header_len"]
        chunk = bytearray(min(CHUNK, max(1, size0 - hl)))
        cview = memoryview(chunk)
        for p, (fd, _size, _h) in zip(paths[1:], checked[1:], strict=True):
            for off in range(hl, size0, CHUNK):
                n = min(CHUNK, size0 - off)
                _pread_into(fd, cview[:n], off, p)
                _or_into(view[off:off + n], cview[:n], intersection)
        struct.pack_into("<H", out, 14, struct.unpack_from("<H", out, 14)[0]
                         & ~persist.FLAG_DIRTY)
        # the flags are masked above (volatile): the key domains of all inputs
        _core.set_key_domains(out, _domains.of_union(h["flags"] for _, _, h in checked))
        del view, cview
        with naming(paths[0]) if naming is not None else contextlib.nullcontext():
            obj = cls._from_buffer(out, secret, None, writable=True, shared=False,
                                   allow_dirty=False)  # a keyed file: the secret's check
        if len(paths) > 1:
            obj._recount()  # the estimate from the bits, as union() stores
        return obj


def _explain_incompatible(first: str, other: str, secret: bytes | None = None) -> None:
    """Raise the in-memory union's own reason, from O(1) read-only maps
    (``union`` checks every argument before it copies anything)."""
    a = persist.open(first, secret=secret)
    try:
        b = persist.open(other, secret=secret)
        try:
            a.union(b)
        finally:
            b.close()
    finally:
        a.close()
    raise IncompatibleFiltersError(
        f"cannot merge {first} with {other}: their headers differ")
