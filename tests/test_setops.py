"""Filters behave like Python's set where the operation has a meaning for the
kind (issue #31 item 12; bloomkit/_setops.py says what a Bloom filter can answer)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import bloomkit
import kind_list

BLOOMS = [bloomkit.BloomFilter, bloomkit.BlockedBloomFilter]


def _filled(cls: type, keys: list[str]) -> bloomkit.BloomFilter[str]:
    f = cls(10_000, 0.001, seed=3)
    f.add_many(keys)
    return f  # type: ignore[no-any-return]


@pytest.mark.parametrize("cls", BLOOMS)
def test_subset_superset_disjoint(cls: type, rng: random.Random) -> None:
    salt = rng.getrandbits(32)
    a_keys = [f"{salt}-a{i}" for i in range(50)]
    b_keys = a_keys + [f"{salt}-b{i}" for i in range(50)]
    a, b = _filled(cls, a_keys), _filled(cls, b_keys)
    c = _filled(cls, [f"{salt}-c{i}" for i in range(50)])
    assert a.issubset(b) and a <= b and a < b and b >= a and b > a and b.issuperset(a)
    assert not b.issubset(a) and not (b <= a)  # certain: b has keys a surely lacks
    assert a <= a and not (a < a)
    assert a.isdisjoint(_filled(cls, [])) and not a.isdisjoint(b)
    # c shares no key with a: disjoint unless their bits collide (10^-3 filters
    # of 50 keys in 10^4-key tables: bits in common are possible, an honest False)
    assert a.isdisjoint(c) in (True, False)
    with pytest.raises(TypeError, match="takes another Bloom filter"):
        a.issubset(set(a_keys))


@pytest.mark.parametrize("cls", BLOOMS)
def test_update_takes_filters_and_keys(cls: type) -> None:
    a, b = _filled(cls, ["x"]), _filled(cls, ["y"])
    a.update(b, ["z"])  # as set.update: a filter is merged, an iterable's keys added
    ref = _filled(cls, ["x"])
    ref |= b
    ref.add("z")
    assert a == ref and all(k in a for k in "xyz")
    a2, b2 = _filled(cls, ["x", "y"]), _filled(cls, ["y", "q"])
    a2.intersection_update(b2)
    assert a2 == (_filled(cls, ["x", "y"]) & b2) and "y" in a2
    with pytest.raises(TypeError, match="takes another Bloom filter"):
        a2.intersection_update(["y"])
    with pytest.raises(bloomkit.IncompatibleFiltersError):
        a.update(cls(10, 0.01))


@pytest.mark.parametrize("cls", BLOOMS)
def test_difference_has_no_meaning_and_says_why(cls: type) -> None:
    a, b = _filled(cls, ["x"]), _filled(cls, ["y"])
    for op in (lambda: a - b, lambda: a ^ b, lambda: a.difference(b),
               lambda: a.symmetric_difference(b), lambda: a.difference_update(b),
               lambda: a.symmetric_difference_update(b)):
        with pytest.raises(TypeError, match="cannot remove keys"):
            op()
    with pytest.raises(TypeError, match="cannot remove keys"):
        a -= b
    with pytest.raises(TypeError, match="cannot remove keys"):
        a ^= b


def test_every_membership_class_has_contains_like_redis() -> None:
    """The Redis classes had `contains` and the local ones did not."""
    import numpy as np

    for f in (bloomkit.BloomFilter(10), bloomkit.BlockedBloomFilter(10),
              bloomkit.CountingBloomFilter(10), bloomkit.CuckooFilter(10),
              bloomkit.QuotientFilter(10), bloomkit.ScalableBloomFilter(10),
              bloomkit.SlidingBloomFilter(10), bloomkit.BinaryFuseFilter(np.arange(3))):
        if hasattr(f, "add"):
            try:
                f.add(1)
            except TypeError:
                pass
        assert f.contains(1) is (1 in f), type(f).__name__
        assert f.contains(10**6) is (10**6 in f)


def test_redis_bloom_filter_has_clear_and_the_local_names(tmp_path: Path) -> None:
    """RedisBloomFilter had no clear (the local classes did) and the local
    classes no contains (Redis did): both now share the membership names."""
    from redis_fixtures import RedisServer, require_redis

    require_redis()
    from bloomkit.redis import FilterNotFoundError, RedisBloomFilter

    names = {"add", "add_many", "update", "contains", "contains_many", "clear",
             "__contains__", "__len__"}
    for cls in (bloomkit.BloomFilter, bloomkit.BlockedBloomFilter, RedisBloomFilter):
        assert names <= set(dir(cls)), (cls.__name__, names - set(dir(cls)))
    server = RedisServer(tmp_path / "redis").start()
    try:
        client = server.client()
        for layout, shards in (("blocked", 3), ("classic", 1)):
            name = f"clear-{layout}"
            f = RedisBloomFilter.create(client, name, 5000, 0.01, layout=layout,
                                        shards=shards)
            other = RedisBloomFilter.open(client, name)
            f.add_many([f"k{i}" for i in range(2000)])
            fresh = f.to_local()
            fresh.clear()
            f.clear()
            assert len(f) == 0 and len(other) == 0 and "k1" not in other
            assert f.to_local().to_bytes() == fresh.to_bytes()
            other.add("z")
            assert "z" in f and len(f) == 1
            f.delete()
            with pytest.raises(FilterNotFoundError):
                other.clear()
            assert not client.keys(f"{{{name}}}*")  # a deleted filter is not brought back
    finally:
        server.stop()


# the filters that merge but are no bit array (a Bloom filter answers comparisons
# and differences: the tests above); a count-min sketch is sized otherwise
MERGERS = kind_list.classes(lambda k: k.mergeable and not k.bitwise
                            and k.capacity_param is not None)


@pytest.mark.parametrize("cls", MERGERS, ids=lambda c: c.__name__)
def test_mergers_update_from_filters_and_refuse_comparisons_saying_why(cls: type) -> None:
    """update() took only keys (a filter said 'not iterable'), and `f <= g`,
    `f - g` said only "not supported between instances": now update merges a
    filter (where the kind merges in place) and every comparison, difference
    and intersection the kind cannot answer raises TypeError with its reason."""
    f, g = cls(1000), cls(1000)
    f.add(1)
    g.add(2)
    if cls is bloomkit.QuotientFilter:
        with pytest.raises(TypeError, match="merges into a new table"):
            f.update(g)
        f.update([2])
    else:
        f.update(g, [3])
        assert 3 in f
    assert 1 in f and 2 in f
    reason = cls._set_reason[:20]
    for op in (lambda: f <= g, lambda: f < g, lambda: f >= g, lambda: f > g,
               lambda: f.issubset(g), lambda: f.issuperset(g), lambda: f.isdisjoint(g),
               lambda: f - g, lambda: f ^ g, lambda: f.difference(g),
               lambda: f.symmetric_difference(g), lambda: f.difference_update(g),
               lambda: f.symmetric_difference_update(g)):
        with pytest.raises(TypeError) as info:
            op()
        assert reason in str(info.value), str(info.value)
    with pytest.raises(TypeError, match="intersection"):
        f & g
