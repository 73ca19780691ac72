"""The static type of keys (docs/keys.md), for annotations and type checkers.

Every structure is generic in its key type: ``BloomFilter(n)`` is a
``BloomFilter[Key]``, ``BloomFilter(n, key=row_key)`` with
``row_key: Callable[[Row], Key]`` is a ``BloomFilter[Row]``, so a type
checker refuses ``f.add(1.5)`` or ``f.add_many(3)`` before the C code would.
The C types are the same for every key type: the parameter exists only for
checkers (``BloomFilter[str]`` at run time is a plain ``types.GenericAlias``).
"""

from __future__ import annotations

from typing import SupportsIndex, TypeAlias

__all__ = ["Key"]

# What the key encoding accepts (docs/keys.md): str (UTF-8), bytes-like objects
# (their raw bytes), and int or any object with __index__ (bool, numpy integer
# and bool scalars).  Floats, None and other objects are refused with TypeError
# unless the structure was built with key=.  (A 1-d buffer of bytes other than
# these three, such as a numpy S1/uint8 array, is a key at run time too; annotate
# it as memoryview(arr) to pass the checker.)
Key: TypeAlias = str | bytes | bytearray | memoryview | SupportsIndex
