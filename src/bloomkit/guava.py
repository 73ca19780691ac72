"""Guava's ``com.google.common.hash.BloomFilter``, byte for byte.

:class:`BloomFilter` reads and writes the bytes of Guava's
``BloomFilter.writeTo`` / ``readFrom`` and answers exactly as its
``mightContain``.  Guava's bytes do not record the funnel (how a key
becomes bytes): as with ``readFrom(in, funnel)``, the reader names it:

- ``funnel="long"``: ``Funnels.longFunnel()``, int keys (a Java long, 8
  little-endian bytes);
- ``funnel="string"``: ``Funnels.stringFunnel(UTF_8)``, str keys;
- ``funnel="bytes"``: ``Funnels.byteArrayFunnel()``, bytes-like keys.

Both strategies Guava has read and write: ``MURMUR128_MITZ_64`` (ordinal 1,
the default of every Guava since 2013) and ``MURMUR128_MITZ_32`` (ordinal 0).
Other funnels are refused by name.  Batches take numpy integer arrays and
Arrow arrays of the funnel's type without a Python object per key.  Bad bytes
raise :class:`bloomkit.FormatError` naming the reason.  See docs/spark.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from . import _core
from ._jvm import (
    GUAVA,
    RULE_BYTES,
    RULE_LONG,
    RULE_STRING,
    bloom_add_many,
    bloom_contains_many,
    java_round,
)
from .errors import IncompatibleFiltersError

__all__ = ["FUNNELS", "STRATEGIES", "BloomFilter", "optimal_num_of_bits"]

#: The funnels bloomkit implements, by the name ``funnel=`` takes.
FUNNELS = {"long": RULE_LONG, "string": RULE_STRING, "bytes": RULE_BYTES}
#: Guava's strategies by ordinal (the first byte of writeTo).
STRATEGIES = {"MURMUR128_MITZ_32": 0, "MURMUR128_MITZ_64": 1}

_OTHER_FUNNELS = {
    "integer": "Funnels.integerFunnel()",
    "int": "Funnels.integerFunnel()",
    "unencoded_chars": "Funnels.unencodedCharsFunnel()",
    "chars": "Funnels.unencodedCharsFunnel()",
}


def optimal_num_of_bits(expected_insertions: int, fpp: float) -> int:
    """Guava's ``optimalNumOfBits(n, p)``: (long)(-n ln p / (ln 2)^2)."""
    if fpp == 0:
        fpp = 5e-324  # Double.MIN_VALUE, as Guava does
    return int(-expected_insertions * math.log(fpp) / (math.log(2) * math.log(2)))


def _rule(funnel: str) -> int:
    if funnel in FUNNELS:
        return FUNNELS[funnel]
    hint = _OTHER_FUNNELS.get(str(funnel).lower())
    if hint is not None:
        raise ValueError(f"Guava funnel {funnel!r} ({hint}) is not supported: bloomkit "
                         f"implements {', '.join(map(repr, FUNNELS))}")
    raise ValueError(f"unknown Guava funnel {funnel!r}: bloomkit implements "
                     f"{', '.join(map(repr, FUNNELS))} (longFunnel, stringFunnel(UTF_8), "
                     "byteArrayFunnel)")


class BloomFilter:
    """Guava's ``BloomFilter`` in its own bytes.

    ``BloomFilter(expected_insertions, fpp=0.03, funnel="long")`` is
    ``BloomFilter.create(funnel, expectedInsertions, fpp)`` of Guava 31
    (k = round(m/n ln 2), the formula of Guava up to 32).
    """

    __slots__ = ("_buf", "_rule", "funnel")

    def __init__(self, expected_insertions: int, fpp: float = 0.03, *, funnel: str = "long",
                 strategy: str = "MURMUR128_MITZ_64") -> None:
        self._rule = _rule(funnel)
        self.funnel = funnel
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown Guava strategy {strategy!r} (Guava has "
                             f"{', '.join(STRATEGIES)})")
        if expected_insertions < 0:
            raise ValueError("expected_insertions must be >= 0")
        if not 0.0 < fpp < 1.0:
            raise ValueError("fpp must be within (0.0, 1.0)")
        n = max(1, expected_insertions)
        m = optimal_num_of_bits(n, fpp)
        k = max(1, java_round(m / n * math.log(2)))
        if k > 255:
            raise ValueError(f"{k} hash functions: Guava stores k in one byte (at most 255)")
        nwords = math.ceil(m / 64) if m > 0 else 0
        if nwords == 0 or nwords > 2**31 - 1:
            raise ValueError(f"{m} bits: Guava needs 1 .. 2^31-1 longs")
        self._buf = bytearray(bytes([STRATEGIES[strategy], k]) + nwords.to_bytes(4, "big") +
                              bytes(8 * nwords))

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview, funnel: str = "long") -> BloomFilter:
        """``BloomFilter.readFrom(in, funnel)`` (``FormatError`` if not a filter)."""
        rule = _rule(funnel)
        buf = bytearray(data)
        _core.jvm_parse(buf, GUAVA)
        f = cls.__new__(cls)
        f._buf, f._rule, f.funnel = buf, rule, funnel
        return f

    def to_bytes(self) -> bytes:
        """The bytes Guava's ``writeTo`` writes."""
        return bytes(self._buf)

    def copy(self) -> BloomFilter:
        return BloomFilter.from_bytes(self._buf, self.funnel)

    @property
    def strategy(self) -> str:
        return "MURMUR128_MITZ_64" if self._buf[0] == 1 else "MURMUR128_MITZ_32"

    @property
    def num_hash_functions(self) -> int:
        return self._buf[1]

    @property
    def bit_size(self) -> int:
        return int.from_bytes(self._buf[2:6], "big") * 64

    def cardinality(self) -> int:
        return int(_core.jvm_cardinality(self._buf, GUAVA))

    def expected_fpp(self) -> float:
        """Guava's ``expectedFpp()``: (set bits / bit size) ** k."""
        return float((self.cardinality() / self.bit_size) ** self.num_hash_functions)

    def _what(self) -> str:
        return f"a Guava BloomFilter with the {self.funnel} funnel"

    def add(self, key: Any) -> bool:
        """``put(key)``: True if a bit changed."""
        return bool(_core.jvm_bloom_key(self._buf, GUAVA, self._rule, key, True))

    put = add

    def __contains__(self, key: Any) -> bool:
        return bool(_core.jvm_bloom_key(self._buf, GUAVA, self._rule, key, False))

    def might_contain(self, key: Any) -> bool:
        return key in self

    def add_many(self, keys: Iterable[Any]) -> None:
        bloom_add_many(self._buf, GUAVA, self._rule, keys, self._what())

    def contains_many(self, keys: Iterable[Any]) -> Any:
        return bloom_contains_many(self._buf, GUAVA, self._rule, keys, self._what())

    def merge(self, other: BloomFilter) -> BloomFilter:
        """``putAll``: OR of equal filters with the same funnel."""
        if not isinstance(other, BloomFilter) or other.funnel != self.funnel:
            raise IncompatibleFiltersError("cannot merge Guava filters of different funnels")
        _core.jvm_combine(self._buf, other._buf, GUAVA, 0)
        return self

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BloomFilter) and self._buf == other._buf and \
            self.funnel == other.funnel

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"bloomkit.guava.BloomFilter(funnel={self.funnel!r}, strategy={self.strategy}, "
                f"bit_size={self.bit_size}, num_hash_functions={self.num_hash_functions})")
