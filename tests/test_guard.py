"""bloomkit.Guard: exact answers, skipped lookups, stats, warnings, async."""

from __future__ import annotations

import asyncio
import random
import warnings

import pytest

from bloomkit import AsyncGuard, BlockedBloomFilter, BloomFilter, Guard, OverfullFilterWarning


def _store(n: int) -> dict[str, int]:
    return {f"k{i}": i for i in range(n)}


class GuardTests:
    def test_answers_are_always_the_lookups(self, rng: random.Random) -> None:
        store = _store(5000)
        f = BlockedBloomFilter(5000, 0.05)
        f.add_many(store)
        calls: list[str] = []

        def lookup(key: str) -> int | None:
            calls.append(key)
            return store.get(key)

        g = Guard(f, lookup)
        keys = [f"k{rng.randrange(10_000)}" for _ in range(20_000)]
        assert [g(k) for k in keys] == [store.get(k) for k in keys]
        s = g.stats
        assert s.calls == len(keys) == s.lookups_made + s.lookups_skipped
        assert s.lookups_made == len(calls)
        present = sum(k in store for k in keys)
        assert s.confirmed_hits == present
        assert s.false_positives == s.lookups_made - present
        absent = len(keys) - present
        assert s.false_positives + s.lookups_skipped == absent
        # the filter skipped most absent keys, at about its error rate
        assert s.observed_false_positive_rate < 0.1
        assert s.skip_ratio > 0.4

    def test_decorator_form_and_miss_value(self) -> None:
        f = BloomFilter(100, 0.01)
        f.add("yes")

        @Guard(f, miss="-")
        def lookup(key: str) -> str:
            return "found" if key == "yes" else "-"

        assert lookup("yes") == "found"
        assert lookup("no") == "-"
        assert lookup.stats.lookups_skipped >= 0
        assert "lookup" in repr(lookup)
        with pytest.raises(TypeError):
            Guard(f)(123)

    def test_is_hit_and_add_keep_filter_in_step(self) -> None:
        f = BloomFilter(100, 0.01)
        db: dict[str, bool] = {}
        g = Guard(f, lambda k: db.get(k, False), miss=False, is_hit=bool)
        assert g("alice") is False and g.stats.lookups_skipped == 1
        db["alice"] = True
        g.add("alice")
        assert g("alice") is True and g.stats.confirmed_hits == 1
        g.reset_stats()
        assert g.stats.calls == 0

    def test_overfull_warning(self) -> None:
        f = BloomFilter(10, 0.01)
        g = Guard(f, lambda k: None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            g.add_many(range(10))
            assert not caught
            g.add_many(range(10, 20))
            g.add_many(range(20, 30))
        assert len([w for w in caught if w.category is OverfullFilterWarning]) == 1
        assert "capacity" in str(caught[0].message)

    def test_rejects_non_filters(self) -> None:
        with pytest.raises(TypeError):
            Guard([1, 2], lambda k: k)  # a list has `in` but no add()
        with pytest.raises(TypeError):
            Guard(BloomFilter(10, 0.1), 5)  # type: ignore[arg-type]


class AsyncGuardTests:
    def test_async_lookup(self) -> None:
        store = _store(100)
        f = BloomFilter(100, 0.01)
        f.add_many(store)
        made: list[str] = []

        @AsyncGuard(f)
        async def lookup(key: str) -> int | None:
            made.append(key)
            await asyncio.sleep(0)
            return store.get(key)

        async def run() -> list[int | None]:
            return await asyncio.gather(*(lookup(f"k{i}") for i in range(200)))

        results = asyncio.run(run())
        assert results == [store.get(f"k{i}") for i in range(200)]
        assert lookup.stats.lookups_made == len(made)
        assert lookup.stats.confirmed_hits == 100
