"""``.npy`` arrays as key sources: memory-mapped, never loaded or unpickled,
handed to ``add_many`` in slices of ``base.BATCH_ROWS`` (bloomkit.sources
describes the encodings).
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from typing import Any

from . import base
from .base import Batch, Source, need

# ---- Begin logic for .npy arrays ------------------------------------------------------


class NpySource(Source):
    """A 1-d ``.npy`` array, memory-mapped and read in slices.  The mapping
    is held only while the file is read (a glob of thousands of files must
    not hold thousands of mappings and descriptors)."""

    def __init__(self, name: str, column: str | None, keyed: bool) -> None:
        self.name = name
        self.size = os.path.getsize(name)
        self._keyed = keyed
        self._field = column
        arr = self._map()  # every check now, before any key is read
        self._len = int(arr.shape[0])
        self._dtype = arr.dtype
        del arr

    def _map(self) -> Any:
        name, column = self.name, self._field
        np = need("numpy", f"{name}: reading .npy", "pip install 'bloomkit[numpy]'")
        with open(name, "rb") as fh:
            magic = fh.read(6)
        if magic != b"\x93NUMPY":
            what = "a .npz archive (save each array with numpy.save)" if magic[:2] == b"PK" \
                else "no .npy magic number"
            raise ValueError(f"{name}: not a .npy file: {what}")
        try:
            arr = np.load(name, mmap_mode="r", allow_pickle=False)
        except Exception as exc:  # a bad header fails in numpy's parser in many ways
            if isinstance(exc, OSError) and exc.filename:
                raise
            text = " ".join(str(exc).split()) or type(exc).__name__
            raise ValueError(f"{name}: cannot read .npy: {text}") from exc
        if not isinstance(arr, np.ndarray):  # pragma: no cover - the magic number says .npy
            raise ValueError(f"{name}: not a .npy array")
        names = arr.dtype.names
        if names:
            if column is None:
                if len(names) != 1:
                    raise ValueError(f"{name}: a structured array: pick a field with column= "
                                     f"/ --column ({', '.join(names)})")
                column = names[0]
            if column not in names:
                raise ValueError(f"{name}: no field {column!r} (fields: {', '.join(names)})")
            arr = arr[column]
            self.column = column
        if arr.ndim != 1:
            raise ValueError(f"{name}: a {arr.ndim}-d array of shape {arr.shape}; bloomkit reads "
                             "1-d arrays (reshape(-1) it, or save one column)")
        where = f"{name}" + (f" field {column!r}" if column else "")
        kind = arr.dtype.kind
        if kind in "fc":
            raise TypeError(f"{where}: dtype {arr.dtype} is a float: floats are not keys "
                            "(a Python float is not either); save integers or strings")
        if kind in "Mm" and not self._keyed:
            raise TypeError(f"{where}: dtype {arr.dtype} (dates/times) is not a key type; "
                            "save .astype('int64') or strings, or pass key= to map the values")
        if kind not in "iubSUMm":
            raise TypeError(f"{where}: dtype {arr.dtype} is not a key type (supported: "
                            "integer, bool, fixed-width bytes S, unicode U)")
        return arr

    def hint(self) -> int:
        return self._len

    def describe(self) -> str:
        return f".npy {self._dtype}"

    def batches(self, counting: bool = False) -> Iterator[Batch]:
        arr = self._map()
        n = int(arr.shape[0])
        native = arr.dtype.newbyteorder("=") if not arr.dtype.isnative else None
        drop = _DropBehind(arr)
        if n == 0:
            yield Batch([], 0, 0, self.size)
        for start in range(0, n, base.BATCH_ROWS):
            part = arr[start:start + base.BATCH_ROWS]
            stop = start + len(part)
            drop.consumed(start)  # rows before this batch were handed out and added
            position = self.size * stop // n
            if counting:
                yield Batch([], len(part), 0, position)
                continue
            if self._keyed or part.dtype.kind in "UMm":
                keys: Any = part.tolist()  # str keys (U), or the objects key= maps
            elif native is not None:
                keys = part.astype(native)  # big-endian: the buffer path reads native
            else:
                keys = part
            yield Batch(keys, len(part), 0, position)


class _DropBehind:
    """Keeps a mapped ``.npy`` file's pages out of this process's RSS.

    Pages of a file mapping that were read count in the reader's resident
    set until they are unmapped, so reading a 8 GB array (10^9 int64 keys)
    through one map would take the process's RSS to 8 GB plus the filter,
    though the kernel could drop them at any time (issue #19: peak RSS at
    most the filter plus 256 MiB).  Every DROP_BYTES of rows read, the
    pages wholly before the read position are released with
    ``madvise(MADV_DONTNEED)`` (a read-only shared file map: the page cache
    keeps them, nothing is lost; a re-read faults them back), and the map
    is marked ``MADV_SEQUENTIAL`` (larger read-ahead).  Where the map or
    ``madvise`` is not available this does nothing."""

    DROP_BYTES = 64 << 20

    def __init__(self, arr: Any) -> None:
        self._mm = None
        base = arr
        while base is not None and not isinstance(base, mmap.mmap):
            base = getattr(base, "_mmap", None) or getattr(base, "base", None)
        if isinstance(base, mmap.mmap) and hasattr(base, "madvise") \
                and hasattr(mmap, "MADV_DONTNEED"):
            self._mm = base
            self._stride = max(1, int(arr.strides[0]) if arr.ndim else 1)
            self._dropped = 0
            try:
                base.madvise(mmap.MADV_SEQUENTIAL)
            except (OSError, AttributeError):
                pass

    def consumed(self, rows: int) -> None:
        """Rows before ``rows`` are no longer needed."""
        mm = self._mm
        if mm is None:
            return
        # the array starts at or after the map's start, so rows * stride
        # bytes from the map's start are all before the read position
        end = min(rows * self._stride, len(mm)) // mmap.PAGESIZE * mmap.PAGESIZE
        if end - self._dropped < self.DROP_BYTES:
            return
        try:
            mm.madvise(mmap.MADV_DONTNEED, self._dropped, end - self._dropped)
        except (OSError, ValueError):
            self._mm = None  # a platform that refuses: stop trying
            return
        self._dropped = end


# ---- End logic for .npy arrays --------------------------------------------------------
