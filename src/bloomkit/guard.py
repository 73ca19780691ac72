"""The two-stage check: a filter in front of an exact, expensive lookup.

``Guard(filter, lookup)`` answers ``lookup(key)`` exactly, but calls
``lookup`` only when the filter says "maybe": a key the filter has surely
never seen gets the miss value straight away. Because a Bloom-type filter
has no false negatives, the answer is always the same as ``lookup``'s; the
filter only decides how often the expensive path runs.

    users = bloomkit.BlockedBloomFilter(1_000_000, 0.01)
    users.add_many(all_names)

    @bloomkit.Guard(users)
    def find_user(name):            # the exact lookup: a database query
        return db.get(name)         # None when absent

    find_user("new-name")           # None, without a query (99% of absent names)
    find_user.stats                 # calls, lookups skipped/made, hits, false positives, ...

``AsyncGuard`` is the same for ``async def`` lookups.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["AsyncGuard", "Guard", "GuardStats", "OverfullFilterWarning"]

V = TypeVar("V")


class OverfullFilterWarning(RuntimeWarning):
    """The guarded filter holds more keys than its capacity: its error rate is above target."""


@dataclass(frozen=True)
class GuardStats:
    """Counters of a :class:`Guard`.

    ``observed_false_positive_rate`` is false positives over every call for
    a key that turned out absent (false positives + lookups skipped): the
    same quantity as the filter's false-positive rate, measured on your
    traffic. ``expected_false_positive_rate`` is the filter's own estimate
    from its fill (``estimate_error_rate()``).
    """

    calls: int
    lookups_skipped: int
    lookups_made: int
    confirmed_hits: int
    false_positives: int
    expected_false_positive_rate: float

    @property
    def observed_false_positive_rate(self) -> float:
        negatives = self.false_positives + self.lookups_skipped
        return self.false_positives / negatives if negatives else 0.0

    @property
    def skip_ratio(self) -> float:
        return self.lookups_skipped / self.calls if self.calls else 0.0


class _GuardBase(Generic[V]):
    def __init__(
        self,
        filter: Any,
        lookup: Callable[[Any], Any] | None = None,
        *,
        miss: Any = None,
        is_hit: Callable[[Any], bool] | None = None,
    ) -> None:
        if not hasattr(filter, "__contains__") or not hasattr(filter, "add"):
            raise TypeError("Guard needs a bloomkit filter (an object with `in` and add())")
        if lookup is not None and not callable(lookup):
            raise TypeError("lookup must be callable")
        self.filter = filter
        self.lookup = lookup
        self.miss = miss
        self._is_hit = is_hit
        self._lock = threading.Lock()
        self._calls = self._skipped = self._made = self._hits = self._fps = 0
        self._warned = False

    # -- bookkeeping -------------------------------------------------------

    def _hit(self, value: Any) -> bool:
        if self._is_hit is not None:
            return bool(self._is_hit(value))
        return value is not self.miss and value != self.miss

    def _check_overfull(self) -> None:
        capacity = getattr(self.filter, "capacity", None)
        if self._warned or capacity is None:
            return
        if len(self.filter) > capacity:
            self._warned = True
            warnings.warn(
                f"the guarded filter holds {len(self.filter)} keys, over its capacity of "
                f"{capacity}: its false-positive rate (now about "
                f"{self.filter.estimate_error_rate():.3%}) is above the "
                f"{self.filter.error_rate:.3%} it was built for; rebuild it larger",
                OverfullFilterWarning,
                stacklevel=3,
            )

    def _record(self, made: bool, hit: bool) -> None:
        with self._lock:
            self._calls += 1
            if not made:
                self._skipped += 1
            else:
                self._made += 1
                if hit:
                    self._hits += 1
                else:
                    self._fps += 1

    @property
    def stats(self) -> GuardStats:
        with self._lock:
            return GuardStats(
                calls=self._calls,
                lookups_skipped=self._skipped,
                lookups_made=self._made,
                confirmed_hits=self._hits,
                false_positives=self._fps,
                expected_false_positive_rate=float(self.filter.estimate_error_rate()),
            )

    def reset_stats(self) -> None:
        with self._lock:
            self._calls = self._skipped = self._made = self._hits = self._fps = 0

    def add(self, key: Hashable) -> bool:
        """Tell the filter about a key the store now holds; call it on every insert."""
        was_new: bool = self.filter.add(key)
        self._check_overfull()
        return was_new

    def add_many(self, keys: Any) -> int:
        added: int = self.filter.add_many(keys)
        self._check_overfull()
        return added

    def __repr__(self) -> str:
        s = self.stats
        name = getattr(self.lookup, "__qualname__", repr(self.lookup))
        return (
            f"{type(self).__name__}({name}, calls={s.calls}, skipped={s.lookups_skipped}, "
            f"false_positives={s.false_positives})"
        )


class Guard(_GuardBase[V]):
    """A filter in front of an exact lookup; see the module documentation.

    ``Guard(filter, lookup, *, miss=None, is_hit=None)``; with no ``lookup``
    the guard is a decorator: ``@Guard(filter)``. ``miss`` is the value
    returned for surely-absent keys (and the value ``lookup`` returns for
    absent keys); ``is_hit(value)`` overrides how a lookup result counts as a
    confirmed hit (default: ``value != miss``).
    """

    def __call__(self, key: Any) -> Any:
        if self.lookup is None:
            if not callable(key):
                raise TypeError("this Guard has no lookup yet: use it as @Guard(filter)")
            self.lookup = key
            return self
        if key not in self.filter:
            self._record(False, False)
            return self.miss
        value = self.lookup(key)
        self._record(True, self._hit(value))
        return value


class AsyncGuard(_GuardBase[V]):
    """:class:`Guard` for ``async def`` lookups: ``await guard(key)``."""

    def __init__(
        self,
        filter: Any,
        lookup: Callable[[Any], Awaitable[Any]] | None = None,
        *,
        miss: Any = None,
        is_hit: Callable[[Any], bool] | None = None,
    ) -> None:
        super().__init__(filter, lookup, miss=miss, is_hit=is_hit)

    def __call__(self, key: Any) -> Any:
        if self.lookup is None:
            if not callable(key):
                raise TypeError("this AsyncGuard has no lookup yet: use it as @AsyncGuard(f)")
            self.lookup = key
            return self
        return self._call(key)

    async def _call(self, key: Any) -> Any:
        if key not in self.filter:
            self._record(False, False)
            return self.miss
        assert self.lookup is not None
        value = await self.lookup(key)
        self._record(True, self._hit(value))
        return value
