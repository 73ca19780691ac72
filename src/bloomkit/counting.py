"""The counting Bloom filter: a Bloom filter that supports remove().

A thin facade over the C type :class:`bloomkit._core.CountingBase`.  Sizing
is the classic Bloom filter's (:func:`bloomkit.design`): the counting filter
uses the same m and k and exactly the same probe sequence, so ``key in f``
answers as a :class:`~bloomkit.BloomFilter` built from the same adds would,
and :meth:`CountingBloomFilter.to_bloom` returns that filter.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, overload

from . import _core
from ._typing import Key
from .bloom import BloomFilter
from .design import design
from .persist import Persistent

__all__ = ["COUNTER_BITS", "KIND_COUNTING_BLOOM", "CountingBloomFilter"]

_K = TypeVar("_K", contravariant=True)  # the key type (see _typing.py)
_T = TypeVar("_T")  # the caller's objects, mapped to a Key by key=

KIND_COUNTING_BLOOM = 3
COUNTER_BITS = (4, 8, 16)


class CountingBloomFilter(Persistent, _core.CountingBase[_K]):
    """A Bloom filter of small saturating counters (Fan et al., 2000).

    ``CountingBloomFilter(capacity, error_rate=0.01, *, counter_bits=4, seed=0,
    key=None, secret=None)``.  ``add`` increments a key's k counters,
    ``remove`` decrements them (``KeyError`` and no change when the key is
    surely absent), ``count(key)`` is the minimum of them.  A counter at its
    maximum ``2**counter_bits - 1`` saturates: it is never incremented past
    it nor decremented again, which can waste a little space but never
    creates a false negative.

    Removing a key that was never added (a false positive) decrements
    counters that other keys rely on and can create false negatives: only
    remove keys you added (keep the keys, or check ``count(key)`` against
    your own bookkeeping).
    """

    __slots__ = ()
    _bk_kind = KIND_COUNTING_BLOOM
    # in-place updates are atomic per counter: many "r+" writers at once
    _shared_writers = True

    @overload
    def __new__(
        cls, capacity: int, error_rate: float = 0.01, *, counter_bits: int = 4, seed: int = 0,
        key: None = None, secret: bytes | None = None,
    ) -> CountingBloomFilter[Key]: ...
    @overload
    def __new__(
        cls, capacity: int, error_rate: float = 0.01, *, counter_bits: int = 4, seed: int = 0,
        key: Callable[[_T], Key], secret: bytes | None = None,
    ) -> CountingBloomFilter[_T]: ...
    def __new__(
        cls,
        capacity: int,
        error_rate: float = 0.01,
        *,
        counter_bits: int = 4,
        seed: int = 0,
        key: Callable[[Any], Key] | None = None,
        secret: bytes | None = None,
    ) -> CountingBloomFilter[Any]:
        if isinstance(counter_bits, bool) or not isinstance(counter_bits, int):
            raise TypeError(f"counter_bits must be one of {COUNTER_BITS}, "
                            f"not {type(counter_bits).__name__}")
        if counter_bits not in COUNTER_BITS:
            raise ValueError(f"counter_bits must be one of {COUNTER_BITS}, got {counter_bits}")
        d = design(capacity, error_rate, "classic")
        return super().__new__(
            cls, d.num_bits, d.num_hashes, counter_bits, d.capacity, d.error_rate,
            seed=seed, secret=secret, key=key,
        )

    def to_bloom(self) -> BloomFilter[_K]:
        """A :class:`BloomFilter` with bit i set iff counter i is nonzero.

        Same m, k, seed, hashing and key=; for a filter that only saw adds it
        is byte-identical to the BloomFilter built from the same adds.
        """
        result: BloomFilter[_K] = self._to_bloom(BloomFilter)
        return result

    def __repr__(self) -> str:
        extra = ", keyed" if self.keyed else ""
        mapped = ", mapped" if self.mapped else ""
        return (
            f"{type(self).__name__}(capacity={self.capacity}, error_rate={self.error_rate:g}, "
            f"num_counters={self.num_counters}, num_hashes={self.num_hashes}, "
            f"counter_bits={self.counter_bits}, seed={self.seed}, count={len(self)}, "
            f"fill_ratio={self.fill_ratio:.4f}{extra}{mapped})"
        )
