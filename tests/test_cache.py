"""TinyLFUCache and @tinylfu_cache: dict semantics, the size bound, scan
resistance, lru_cache-compatible results, and a model-based state machine."""

from __future__ import annotations

import functools
import random
import threading
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from bloomkit.cache import CacheInfo, TinyLFUCache, tinylfu_cache


class CacheSemanticsTests:
    def test_dict_like_operations(self) -> None:
        c: TinyLFUCache[str, int] = TinyLFUCache(100)
        assert c.get("a") is None and c.get("a", 7) == 7
        c.set("a", 1)
        c["b"] = 2
        assert c.get("a") == 1 and c["b"] == 2 and "a" in c and "zz" not in c
        assert len(c) == 2 and sorted(c) == ["a", "b"]
        c["a"] = 10
        assert c["a"] == 10 and len(c) == 2
        assert c.pop("a") == 10 and "a" not in c
        assert c.pop("a", None) is None
        with pytest.raises(KeyError):
            c.pop("a")
        with pytest.raises(KeyError):
            c["missing"]
        del c["b"]
        assert len(c) == 0
        s = c.stats
        assert (s.hits, s.misses) == (3, 3) and s.maxsize == 100
        c.set("x", 1)
        c.clear()
        assert len(c) == 0 and c.stats.hits == 0 and "TinyLFUCache" in repr(c)

    def test_values_may_be_none_or_falsy(self) -> None:
        c: TinyLFUCache[int, Any] = TinyLFUCache(10)
        sentinel = object()
        c[1] = None
        c[2] = 0
        assert c.get(1, sentinel) is None and c.get(2, sentinel) == 0

    @pytest.mark.parametrize("maxsize", [0, 1, 2, 3, 10, 101, 1000])
    def test_size_never_exceeds_maxsize(self, maxsize: int, rng: random.Random) -> None:
        c: TinyLFUCache[int, int] = TinyLFUCache(maxsize)
        hits = 0
        for _ in range(20_000):
            k = int(rng.paretovariate(1.0)) if rng.random() < 0.7 else rng.randrange(10**6)
            v = c.get(k)
            if v is None:
                c.set(k, k * 2)
            else:
                assert v == k * 2
                hits += 1
            assert len(c) <= maxsize
        s = c.stats
        assert s.size == len(c) <= maxsize
        assert (s.hits, s.misses) == (hits, 20_000 - hits)
        if maxsize >= 10:
            assert s.admissions > 0 and s.rejections > 0

    def test_arguments(self) -> None:
        for bad in [-1]:
            with pytest.raises(ValueError):
                TinyLFUCache(bad)
        for bad_t in [1.5, None, "10", True]:
            with pytest.raises(TypeError):
                TinyLFUCache(bad_t)  # type: ignore[arg-type]

    def test_frequent_keys_survive_a_scan(self) -> None:
        c: TinyLFUCache[Any, int] = TinyLFUCache(200)
        hot = list(range(100))
        for _ in range(20):
            for k in hot:
                if c.get(k) is None:
                    c.set(k, k)
        for i in range(10_000):  # one-hit wonders
            key = ("scan", i)
            if c.get(key) is None:
                c.set(key, i)
        survivors = sum(1 for k in hot if k in c)
        assert survivors >= 95
        assert c.stats.rejections >= 9_000


class DecoratorTests:
    def test_same_results_as_lru_cache(self, rng: random.Random) -> None:
        calls: list[tuple[Any, ...]] = []

        def f(a: int, b: int = 0, *, c: str = "") -> tuple[int, int, str]:
            calls.append((a, b, c))
            return (a * 31 + b, len(calls) % 1, c * 2)

        ours = tinylfu_cache(64)(f)
        ref = functools.lru_cache(maxsize=64)(f)
        for _ in range(5000):
            a = int(rng.paretovariate(0.8)) % 500
            kwargs: dict[str, Any] = {}
            if rng.random() < 0.3:
                kwargs["b"] = rng.randrange(3)
            if rng.random() < 0.2:
                kwargs["c"] = rng.choice("xyz")
            assert ours(a, **kwargs) == ref(a, **kwargs)
        info = ours.cache_info()
        assert isinstance(info, CacheInfo)
        assert info.hits + info.misses == 5000 and info.maxsize == 64 and info.currsize <= 64
        assert ours.__wrapped__ is f and ours.__name__ == "f"
        assert ours.cache_parameters() == {"maxsize": 64, "typed": False}
        ours.cache_clear()
        assert ours.cache_info() == CacheInfo(0, 0, 64, 0)

    def test_bare_decorator_and_typed(self) -> None:
        @tinylfu_cache
        def g(x: Any) -> str:
            return type(x).__name__

        assert g(1) == "int" and g(1) == "int" and g.cache_info().hits == 1
        assert g.cache_parameters()["maxsize"] == 128

        @tinylfu_cache(10, typed=True)
        def h(x: Any) -> str:
            return type(x).__name__

        assert h(1) == "int" and h(1.0) == "float" and h.cache_info().currsize == 2
        with pytest.raises(TypeError):
            h([1])  # unhashable argument, like lru_cache
        with pytest.raises(ValueError):
            tinylfu_cache(-1)

    def test_exceptions_are_not_cached(self) -> None:
        n = [0]

        @tinylfu_cache(8)
        def boom(x: int) -> int:
            n[0] += 1
            if n[0] == 1:
                raise RuntimeError("first call fails")
            return x

        with pytest.raises(RuntimeError):
            boom(1)
        assert boom(1) == 1 and boom(1) == 1 and n[0] == 2

    def test_threads(self) -> None:
        @tinylfu_cache(50)
        def sq(x: int) -> int:
            return x * x

        errors: list[BaseException] = []

        def work(seed: int) -> None:
            r = random.Random(seed)
            try:
                for _ in range(3000):
                    x = r.randrange(200)
                    assert sq(x) == x * x
            except BaseException as e:  # pragma: no cover - reported below
                errors.append(e)

        ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not errors and sq.cache_info().currsize <= 50


class CacheMachine(RuleBasedStateMachine):
    """Against a dict model: the cache holds a subset of the model with the
    same values, never more than maxsize entries, and pop removes."""

    def __init__(self) -> None:
        super().__init__()
        self.maxsize = random.choice([1, 3, 8, 50])
        self.c: TinyLFUCache[int, int] = TinyLFUCache(self.maxsize)
        self.model: dict[int, int] = {}

    @rule(k=st.integers(0, 60), v=st.integers())
    def set(self, k: int, v: int) -> None:
        self.c.set(k, v)
        self.model[k] = v

    @rule(k=st.integers(0, 60))
    def get(self, k: int) -> None:
        sentinel = object()
        got = self.c.get(k, sentinel)
        if got is not sentinel:
            assert k in self.model and got == self.model[k]

    @rule(k=st.integers(0, 60))
    def pop(self, k: int) -> None:
        got = self.c.pop(k, None)
        if got is not None:
            assert got == self.model[k]
        self.model.pop(k, None)
        assert k not in self.c

    @rule()
    def clear(self) -> None:
        self.c.clear()
        self.model.clear()

    @invariant()
    def subset_of_model(self) -> None:
        assert len(self.c) <= self.maxsize
        for k in self.c:
            assert k in self.model
        assert len(set(self.c)) == len(self.c)


TestCacheMachine = CacheMachine.TestCase
TestCacheMachine.settings = settings(max_examples=60, stateful_step_count=50, deadline=None)
