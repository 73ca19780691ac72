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

Key: TypeAlias = str | bytes | bytearray | memoryview | SupportsIndex
"""What the key encoding accepts: str (UTF-8), bytes-like, and int or any object
with ``__index__`` (bool, numpy integer scalars).  Floats, None and other
objects are refused with TypeError unless the structure was built with ``key=``."""
