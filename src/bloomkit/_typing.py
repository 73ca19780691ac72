"""The static type of keys (docs/keys.md), for annotations and type checkers.

Every structure is generic in its key type: ``BloomFilter(n)`` is a
``BloomFilter[Key]``, ``BloomFilter(n, key=row_key)`` with
``row_key: Callable[[Row], Key]`` is a ``BloomFilter[Row]``, so a type
checker refuses ``f.add(1.5)`` or ``f.add_many(3)`` before the C code would.
The C types are the same for every key type: the parameter exists only for
checkers (``BloomFilter[str]`` at run time is a plain ``types.GenericAlias``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, SupportsIndex, TypeAlias

__all__ = ["Key"]

# What the key encoding accepts: str (UTF-8), anything with a buffer (bytes,
# bytearray, memoryview, mmap, array.array, numpy arrays and scalars: their raw
# bytes), and int or any object with __index__ (bool, numpy integer scalars).
# Floats, None and other objects are refused with TypeError unless the structure
# was built with key=.
if TYPE_CHECKING:
    from typing_extensions import Buffer  # PEP 688

    Key: TypeAlias = str | Buffer | SupportsIndex
else:  # for annotations evaluated at run time, where Buffer (3.12+) may be missing
    Key: TypeAlias = str | bytes | bytearray | memoryview | SupportsIndex
