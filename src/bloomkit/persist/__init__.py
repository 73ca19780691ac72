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

Design of a mapped object (docs/FORMAT.md, "Files and memory maps"): the object is
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

The package's modules, one concern each: kinds.py (the kind registry,
``dumps``/``loads``), atomic.py (``save``/``load``), temps.py (temporary
files and their cleanup), checks.py (size limits on sparse files, the full
check of a state), registry.py (the mapped objects, the fork hook),
mapped.py (``open``/``create``/``flush``/``close``), repair.py
(``verify``/``repair``) and mixin.py (:class:`Persistent`,
``register_kind``).
"""

from __future__ import annotations

from .atomic import load, save
from .checks import SPARSE_MAX_BYTES
from .kinds import FLAG_DIRTY, PathLike, dumps, loads
from .mapped import close, create, flush, open
from .mixin import Persistent, register_kind
from .repair import repair, verify

__all__ = [
    "FLAG_DIRTY",
    "SPARSE_MAX_BYTES",
    "PathLike",
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
