"""Python's set protocol for Bloom filters, where it has a meaning (issue #31 item 12).

A Bloom filter's bits are a superset image of its keys: the filter of A | B
is the OR of the two filters, and ``keys(A) <= keys(B)`` implies
``bits(A) <= bits(B)``.  So these answers are exact where they say no and
probabilistic where they say yes, like ``in``:

- ``a.issubset(b)`` / ``a <= b``: False is certain (some key of ``a`` is
  surely absent from ``b``); True means every key of ``a`` is *probably* in
  ``b`` (``a``'s bits are all set in ``b``).  ``a < b`` adds ``a != b``.
- ``a.isdisjoint(b)``: True is certain (no bit in common, so no common key);
  False means the two *may* share a key.
- ``update(*others)`` / ``|=`` take filters (OR, equal parameters) as well as
  keys; ``intersection_update(*others)`` / ``&=`` take filters (AND: a
  filter of possibly-common keys; the intersection's rate is above each
  input's, docs/bloom.md).
- ``difference``, ``symmetric_difference``, ``-``, ``^`` and their in-place
  forms have no meaning: clearing bits would remove other keys that share
  them (a false negative), so they raise TypeError saying so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

from . import _core

if TYPE_CHECKING:
    from .bloom import BloomBase  # its stub; bloom imports this module
else:
    BloomBase = _core.BloomBase

_NO_DIFFERENCE = (
    "{cls} has no {op}: a Bloom filter cannot remove keys (clearing a key's bits would "
    "also remove the other keys that share them, a false negative); build a filter from "
    "the difference of the key sets, or use a CountingBloomFilter or a CuckooFilter, "
    "which can remove the keys you name"
)


def _filter(self: Any, other: Any, op: str) -> Any:
    if not isinstance(other, BloomBase):
        raise TypeError(f"{type(self).__name__}.{op} takes another Bloom filter of the same "
                        f"parameters, not {type(other).__name__}")
    return other


class BloomSetOps:
    """The set methods of BloomFilter and BlockedBloomFilter (see the module)."""

    __slots__ = ()

    def update(self, *others: Any) -> None:
        """Add the keys of every iterable, and OR in every filter given (as
        ``set.update``: ``f.update(g)`` is ``f |= g``)."""
        for other in others:
            if isinstance(other, BloomBase):
                self.__ior__(other)  # type: ignore[attr-defined]
            else:
                self.add_many(other)  # type: ignore[attr-defined]

    def intersection_update(self, *others: Any) -> None:
        """``f &= g`` for every filter given (equal parameters)."""
        for other in others:
            self.__iand__(_filter(self, other, "intersection_update"))  # type: ignore[attr-defined]

    def issubset(self, other: Any) -> bool:
        """False: some key of this filter is surely not in ``other``.  True:
        every key of it is probably in ``other`` (all its bits are set there)."""
        other = _filter(self, other, "issubset")
        return bool((self | other) == other)

    def issuperset(self, other: Any) -> bool:
        """``other.issubset(self)``."""
        return bool(_filter(self, other, "issuperset").issubset(self))

    def isdisjoint(self, other: Any) -> bool:
        """True: surely no key in common (no bit in common).  False: they may share one."""
        other = _filter(self, other, "isdisjoint")
        return bool((self & other).fill_ratio == 0)

    def __le__(self, other: Any) -> bool:
        if not isinstance(other, BloomBase):
            return NotImplemented
        return self.issubset(other)

    def __ge__(self, other: Any) -> bool:
        if not isinstance(other, BloomBase):
            return NotImplemented
        return self.issuperset(other)

    def __lt__(self, other: Any) -> bool:
        if not isinstance(other, BloomBase):
            return NotImplemented
        return self.issubset(other) and not self._same(other)

    def __gt__(self, other: Any) -> bool:
        if not isinstance(other, BloomBase):
            return NotImplemented
        return self.issuperset(other) and not self._same(other)

    def _same(self, other: Any) -> bool:
        return bool(other == self)

    def _no_difference(self, op: str) -> NoReturn:
        raise TypeError(_NO_DIFFERENCE.format(cls=type(self).__name__, op=op))

    def difference(self, *others: Any) -> NoReturn:
        self._no_difference("difference")

    def difference_update(self, *others: Any) -> NoReturn:
        self._no_difference("difference_update")

    def symmetric_difference(self, other: Any) -> NoReturn:
        self._no_difference("symmetric_difference")

    def symmetric_difference_update(self, other: Any) -> NoReturn:
        self._no_difference("symmetric_difference_update")

    def __sub__(self, other: Any) -> NoReturn:
        self._no_difference("'-' (difference)")

    def __isub__(self, other: Any) -> NoReturn:
        self._no_difference("'-=' (difference_update)")

    def __xor__(self, other: Any) -> NoReturn:
        self._no_difference("'^' (symmetric_difference)")

    def __ixor__(self, other: Any) -> NoReturn:
        self._no_difference("'^=' (symmetric_difference_update)")


class MergeSetOps:
    """The set methods of the structures that merge but cannot compare
    (counting, cuckoo, scalable, quotient filters): ``update`` takes filters
    (``|=``) as well as keys; the comparisons, ``isdisjoint``, the
    differences and (where the class has none) the intersection raise
    TypeError giving the class's reason (``_set_reason``)."""

    __slots__ = ()
    _set_reason: str = "it does not offer set comparisons"

    def update(self, *others: Any) -> None:
        """Add the keys of every iterable, and merge in every filter given
        (as ``set.update``: ``f.update(g)`` is ``f |= g``)."""
        for other in others:
            if isinstance(other, type(self)):
                ior = getattr(self, "__ior__", None)
                if ior is None:  # QuotientFilter: a merge may need a larger table
                    raise TypeError(f"{type(self).__name__} merges into a new table, not in "
                                    "place: use f = f | g")
                ior(other)
            else:
                self.add_many(other)  # type: ignore[attr-defined]

    def _no_set(self, op: str) -> NoReturn:
        raise TypeError(f"{type(self).__name__} has no {op}: {self._set_reason}")

    def issubset(self, other: Any) -> NoReturn:
        self._no_set("issubset")

    def issuperset(self, other: Any) -> NoReturn:
        self._no_set("issuperset")

    def isdisjoint(self, other: Any) -> NoReturn:
        self._no_set("isdisjoint")

    def __le__(self, other: Any) -> NoReturn:
        self._no_set("'<=' (issubset)")

    def __ge__(self, other: Any) -> NoReturn:
        self._no_set("'>=' (issuperset)")

    def __lt__(self, other: Any) -> NoReturn:
        self._no_set("'<' (proper subset)")

    def __gt__(self, other: Any) -> NoReturn:
        self._no_set("'>' (proper superset)")

    def difference(self, *others: Any) -> NoReturn:
        self._no_set("difference")

    def difference_update(self, *others: Any) -> NoReturn:
        self._no_set("difference_update")

    def symmetric_difference(self, other: Any) -> NoReturn:
        self._no_set("symmetric_difference")

    def symmetric_difference_update(self, other: Any) -> NoReturn:
        self._no_set("symmetric_difference_update")

    def __sub__(self, other: Any) -> NoReturn:
        self._no_set("'-' (difference)")

    def __isub__(self, other: Any) -> NoReturn:
        self._no_set("'-=' (difference_update)")

    def __xor__(self, other: Any) -> NoReturn:
        self._no_set("'^' (symmetric_difference)")

    def __ixor__(self, other: Any) -> NoReturn:
        self._no_set("'^=' (symmetric_difference_update)")

    def intersection(self, *others: Any) -> NoReturn:
        self._no_set("intersection")

    def intersection_update(self, *others: Any) -> NoReturn:
        self._no_set("intersection_update")

    def __and__(self, other: Any) -> NoReturn:
        self._no_set("'&' (intersection)")

    def __iand__(self, other: Any) -> NoReturn:
        self._no_set("'&=' (intersection_update)")
