"""bloomkit.dask on a real distributed.LocalCluster with two worker processes.

R27: any partitioning of the same keys builds the same bytes as a single
build; incompatible partials raise; the semi-join keeps every true match.
The two workers run with different PYTHONHASHSEED values, so every test here
also checks that filters travel between processes through the one format.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
import operator
import random
from collections.abc import Iterator
from typing import Any

import pytest

np = pytest.importorskip("numpy")
pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

import dask  # noqa: E402
import dask.array as da  # noqa: E402
import dask.bag as db  # noqa: E402
import dask.dataframe as dd  # noqa: E402
from dask.delayed import delayed  # noqa: E402

import bloomkit  # noqa: E402
import bloomkit.dask as bkd  # noqa: E402
from bloomkit import (  # noqa: E402
    BlockedBloomFilter,
    BloomFilter,
    CountingBloomFilter,
    CountMinSketch,
    IncompatibleFiltersError,
)

KINDS = [BloomFilter, BlockedBloomFilter]


class _SeededNanny(distributed.Nanny):  # type: ignore[misc]
    """A nanny whose worker process starts with its own PYTHONHASHSEED.

    The seed must be in the environment before the process is spawned (the
    nanny's env= is applied after start-up, too late for str hashing), so it
    goes into pre_spawn_env, which distributed otherwise pins to one value
    for every worker.
    """

    _seeds = itertools.count(1)
    _spawning: asyncio.Lock | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pre_spawn_env["PYTHONHASHSEED"] = str(next(self._seeds))

    async def instantiate(self) -> Any:
        # pre_spawn_env goes through the parent's os.environ: spawn one at a time.
        if _SeededNanny._spawning is None:
            _SeededNanny._spawning = asyncio.Lock()
        async with _SeededNanny._spawning:
            return await super().instantiate()


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    # The active memory manager drops "extra" replicas of a key every 2 s,
    # among them the broadcast filter's once no task waits for it:
    # test_filter_is_broadcast_once_to_every_worker then found it on one
    # worker of two in about one run of four (on main too).  The
    # broadcast, not the manager's later cleanup, is what the tests check.
    with dask.config.set({"distributed.scheduler.active-memory-manager.start": False}), \
            distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        worker_class=_SeededNanny,
        dashboard_address=None,
        silence_logs=logging.ERROR,
    ) as cluster, distributed.Client(cluster) as c:
        c.wait_for_workers(2)
        yield c


@pytest.fixture
def local() -> Iterator[None]:
    """The in-process scheduler, for tests of logic that needs no cluster (faster)."""
    import dask

    with dask.config.set(scheduler="sync"):
        yield


# ---- helpers -----------------------------------------------------------------------------


def _split(rng: random.Random, items: list[Any], parts: int) -> list[list[Any]]:
    """``items`` cut at random points into ``parts`` pieces (some may be empty)."""
    cuts = sorted(rng.randint(0, len(items)) for _ in range(parts - 1))
    bounds = [0, *cuts, len(items)]
    return [items[a:b] for a, b in itertools.pairwise(bounds)]


def _mixed_keys(rng: random.Random, n: int) -> list[Any]:
    """str, non-ASCII str, bytes, ints (negative, huge) with repeats, shuffled."""
    keys: list[Any] = []
    for i in range(n):
        r = i % 5
        if r == 0:
            keys.append(f"user:{rng.randrange(10**9)}")
        elif r == 1:
            keys.append(f"naïve-κλειδί-{i}")
        elif r == 2:
            keys.append(rng.randbytes(rng.randint(1, 24)))
        elif r == 3:
            keys.append(rng.randrange(-(2**70), 2**70))
        else:
            keys.append(-i)
    keys += rng.sample(keys, n // 10)  # repeats: the exact count would depend on order
    rng.shuffle(keys)
    return keys


def _single(kind: type[Any], keys: Any, *args: Any, **kwargs: Any) -> Any:
    """The single-machine reference: one build, then the count from the bits."""
    f = kind(*args, **kwargs)
    f.add_many(keys)
    f._recount()
    return f


def _bag(rng: random.Random, keys: list[Any], parts: int) -> Any:
    return db.from_delayed([delayed(list)(chunk) for chunk in _split(rng, keys, parts)])


def _series(rng: random.Random, values: list[Any], parts: int, dtype: str) -> Any:
    chunks = _split(rng, values, parts)
    meta = pd.Series([], dtype=dtype)
    return dd.from_delayed(
        [delayed(pd.Series)(chunk, dtype=dtype) for chunk in chunks], meta=meta, verify_meta=False
    )


def _array(rng: random.Random, arr: Any, parts: int) -> Any:
    sizes = tuple(len(c) for c in _split(rng, list(range(len(arr))), parts))
    return da.from_array(arr, chunks=(sizes,))


# ---- R27: byte-identical builds ----------------------------------------------------------


class StaticFuseBuildTests:
    """Issue #17: BinaryFuseFilter over partitions that ship 64-bit hashes;
    one task builds; byte-identical to a single-machine build."""

    def test_bag_with_repeats_across_partitions_matches_single_build(
        self, client: Any, rng: random.Random
    ) -> None:
        keys = _mixed_keys(rng, 3000)
        ref = bloomkit.BinaryFuseFilter(keys, seed=7).to_bytes()
        for parts in [1, rng.randint(2, 40)]:
            f = bkd.build(_bag(rng, keys, parts), bloomkit.BinaryFuseFilter, seed=7)
            assert f.to_bytes() == ref, f"{parts} partitions"

    def test_int_array_keyed_and_key_function(self, client: Any, rng: random.Random) -> None:
        arr = np.array([rng.randrange(-(2**62), 2**62) for _ in range(20_000)], dtype=np.int64)
        secret = bytes(range(16))
        ref = bloomkit.BinaryFuseFilter(arr, fingerprint_bits=16, secret=secret)
        f = bkd.build(_array(rng, arr, 7), bloomkit.BinaryFuseFilter, error_rate=1e-4,
                      secret=secret)
        assert f.to_bytes() == ref.to_bytes() and f.fingerprint_bits == 16
        words = [f"Word{i}" for i in range(500)]
        ref = bloomkit.BinaryFuseFilter(words, key=str.lower)
        f = bkd.build(_bag(rng, words, 5), bloomkit.BinaryFuseFilter, key=str.lower)
        assert f.to_bytes() == ref.to_bytes() and "word7" in f

    def test_capacity_and_unknown_parameters_are_refused(self, local: None) -> None:
        bag = db.from_sequence(["a"])
        with pytest.raises(TypeError, match="no capacity"):
            bkd.build(bag, bloomkit.BinaryFuseFilter, 100)
        with pytest.raises(TypeError, match="takes no width"):
            bkd.build(bag, bloomkit.BinaryFuseFilter, width=3)
        with pytest.raises(ValueError, match="8, 16 or 32"):
            bkd.build(bag, bloomkit.BinaryFuseFilter, fingerprint_bits=12)
        assert len(bkd.build(db.from_sequence([], npartitions=1),
                             bloomkit.BinaryFuseFilter)) == 0



@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
class PartitionedBuildTests:
    def test_bag_of_mixed_keys_matches_single_build(
        self, client: Any, rng: random.Random, kind: type[Any]
    ) -> None:
        keys = _mixed_keys(rng, 3000)
        ref = _single(kind, keys, 4000, 0.01).to_bytes()
        for parts in [1, rng.randint(2, 64)]:
            f = bkd.build(_bag(rng, keys, parts), kind, 4000, 0.01, split_every=rng.randint(2, 9))
            assert f.to_bytes() == ref, f"{parts} partitions"

    def test_string_series_with_nulls_matches_single_build(
        self, client: Any, rng: random.Random, kind: type[Any]
    ) -> None:
        values: list[Any] = [f"order-{rng.randrange(10**6)}" for _ in range(3000)]
        values += [None] * 50
        rng.shuffle(values)
        ref = _single(kind, [v for v in values if v is not None], 3000, 0.001).to_bytes()
        for parts in rng.sample(range(1, 65), 2):
            f = bkd.build(_series(rng, values, parts, "string"), kind, 3000, 0.001)
            assert f.to_bytes() == ref, f"{parts} partitions"

    def test_int_series_and_arrays_match_single_build(
        self, client: Any, rng: random.Random, kind: type[Any]
    ) -> None:
        ints = np.array([rng.randrange(-(2**63), 2**63) for _ in range(4000)], dtype=np.int64)
        ref = _single(kind, ints.tolist(), 5000, 0.01, seed=99).to_bytes()
        for parts in rng.sample(range(1, 65), 2):
            from_array = bkd.build(_array(rng, ints, parts), kind, 5000, 0.01, seed=99)
            assert from_array.to_bytes() == ref, f"array, {parts} blocks"
        series = _series(rng, ints.tolist(), rng.randint(1, 64), "int64")
        assert bkd.build(series, kind, 5000, 0.01, seed=99).to_bytes() == ref
        fixed = np.array([rng.randbytes(8) for _ in range(2000)], dtype="S8")
        ref_s = _single(kind, fixed.tolist(), 2000, 0.01).to_bytes()
        parts = rng.randint(1, 64)
        assert bkd.build(_array(rng, fixed, parts), kind, 2000, 0.01).to_bytes() == ref_s

    def test_keyed_filter_with_key_function_matches_single_build(
        self, client: Any, rng: random.Random, kind: type[Any]
    ) -> None:
        secret = rng.randbytes(16)
        stems = ["Alpha", "alpha", "BETA", "gamma"]
        words = [rng.choice(stems) + str(i % 700) for i in range(2000)]
        ref = _single(kind, words, 1000, 0.01, secret=secret, key=str.lower, seed=5)
        parts = rng.randint(2, 64)
        f = bkd.build(_bag(rng, words, parts), kind, 1000, 0.01, secret=secret, key=str.lower,
                      seed=5)
        assert f.keyed and f.key is str.lower
        assert f.to_bytes() == ref.to_bytes()
        assert all(w.upper() in f for w in words)

    def test_count_is_the_estimate_from_the_bits(
        self, client: Any, rng: random.Random, kind: type[Any]
    ) -> None:
        keys = list(range(1500)) * 2
        f = bkd.build(_bag(rng, keys, rng.randint(1, 64)), kind, 2000)
        assert len(f) == round(f.estimate_count())
        assert all(k in f for k in range(1500))

    def test_empty_collection_gives_an_empty_filter(
        self, client: Any, kind: type[Any]
    ) -> None:
        f = bkd.build(db.from_sequence([], npartitions=1), kind, 100)
        assert f.to_bytes() == _single(kind, [], 100).to_bytes()


class CountingBuildTests:
    """R27 for CountingBloomFilter (merged by saturating counter sums)."""

    def test_partitioned_counting_matches_single_build(
        self, client: Any, rng: random.Random
    ) -> None:
        keys: list[Any] = [rng.randrange(10**6) for _ in range(4000)]
        keys += [f"k{rng.randrange(3000)}" for _ in range(2000)]  # repeats: counts > 1
        rng.shuffle(keys)
        for bits in (4, 16):
            ref = _single(CountingBloomFilter, keys, 7000, 0.01, counter_bits=bits, seed=5)
            for parts in [1, rng.randint(2, 64)]:
                f = bkd.build(_bag(rng, keys, parts), CountingBloomFilter, 7000, 0.01,
                              counter_bits=bits, seed=5)
                assert isinstance(f, CountingBloomFilter)
                assert f.to_bytes() == ref.to_bytes(), f"{parts} partitions, {bits} bits"
                assert len(f) == len(keys)

    def test_incompatible_counting_partials_raise(self, client: Any) -> None:
        with pytest.raises(IncompatibleFiltersError):
            bkd.reduce_filters([CountingBloomFilter(100, 0.01, counter_bits=4),
                                CountingBloomFilter(100, 0.01, counter_bits=8)])


class CountMinBuildTests:
    """R27 for CountMinSketch (merged by counter sums, no count estimate to store)."""

    def test_partitioned_sketch_matches_single_build(
        self, client: Any, rng: random.Random
    ) -> None:
        stream = [int(rng.paretovariate(1.1)) for _ in range(4000)]
        stream += [f"page/{rng.randrange(300)}" for _ in range(2000)]
        rng.shuffle(stream)
        ref = CountMinSketch(300, 4, seed=3)
        ref.add_many(stream)
        for parts in [1, rng.randint(2, 64)]:
            cms = bkd.build(_bag(rng, stream, parts), CountMinSketch, width=300, depth=4, seed=3)
            assert isinstance(cms, CountMinSketch)
            assert cms.to_bytes() == ref.to_bytes(), f"{parts} partitions"
        ints = np.array([int(rng.paretovariate(1.1)) for _ in range(3000)], dtype=np.int64)
        ref_i = CountMinSketch(128, 3, counter_bits=64)
        ref_i.add_many(ints)
        parts = rng.randint(1, 64)
        arr = bkd.build(_array(rng, ints, parts), CountMinSketch, width=128, depth=3,
                        counter_bits=64)
        assert arr.to_bytes() == ref_i.to_bytes()

    def test_incompatible_sketches_raise(self, client: Any) -> None:
        with pytest.raises(IncompatibleFiltersError):
            bkd.reduce_filters([CountMinSketch(100, 3), CountMinSketch(101, 3)])

    def test_capacity_and_conservative_are_refused(self, local: None) -> None:
        bag = db.from_sequence([1, 2], npartitions=1)
        with pytest.raises(TypeError, match="capacity"):
            bkd.build(bag, CountMinSketch, 100, width=10, depth=2)
        with pytest.raises(TypeError, match="error_rate"):
            bkd.build(bag, CountMinSketch, error_rate=0.01, width=10, depth=2)
        with pytest.raises(ValueError, match="conservative"):
            bkd.build(bag, CountMinSketch, width=10, depth=2, conservative=True)


class CapacityChoiceTests:
    def test_none_counts_items_and_says_so(
        self, client: Any, rng: random.Random, caplog: pytest.LogCaptureFixture
    ) -> None:
        keys = [rng.randrange(500) for _ in range(3000)]
        with caplog.at_level(logging.INFO, logger="bloomkit.dask"):
            f = bkd.build(_bag(rng, keys, 7), BloomFilter, None, 0.01)
        assert f.capacity == len(keys)
        assert any("3000" in r.getMessage() for r in caplog.records)
        assert f.to_bytes() == _single(BloomFilter, keys, len(keys), 0.01).to_bytes()

    def test_none_on_a_series_skips_nulls(self, local: None, rng: random.Random) -> None:
        values: list[Any] = [str(i) for i in range(900)] + [None] * 100
        assert bkd.choose_capacity(_series(rng, values, 5, "string")) == 900

    def test_distinct_counts_distinct_keys(self, local: None, rng: random.Random) -> None:
        keys = [rng.randrange(2000) for _ in range(6000)]
        truth = len(set(keys))
        assert bkd.choose_capacity(_bag(rng, keys, 6), "distinct") == truth
        assert bkd.choose_capacity(_array(rng, np.array(keys), 6), "distinct") == truth
        approx = bkd.choose_capacity(_series(rng, keys, 6, "int64"), "distinct")
        assert abs(approx - truth) <= 0.05 * truth
        f = bkd.build(_bag(rng, keys, 6), BlockedBloomFilter, "distinct")
        assert f.capacity == truth

    def test_array_length_needs_no_pass(self, local: None) -> None:
        assert bkd.choose_capacity(da.zeros(1234, chunks=100, dtype=np.int64)) == 1234

    def test_empty_input_gets_capacity_one(self, local: None) -> None:
        assert bkd.choose_capacity(db.from_sequence([], npartitions=1)) == 1

    def test_bad_how_is_refused(self, local: None) -> None:
        with pytest.raises(ValueError, match="count"):
            bkd.choose_capacity(da.zeros(3, chunks=1), "roughly")


# ---- R27: merging partials ----------------------------------------------------------------


class PartialMergeTests:
    def test_compatible_partials_merge_to_the_union(
        self, client: Any, rng: random.Random
    ) -> None:
        shards = _split(rng, _mixed_keys(rng, 2000), rng.randint(2, 20))
        partials = [delayed(_single)(BlockedBloomFilter, s, 3000) for s in shards]
        merged = bkd.reduce_filters(partials, split_every=3)
        ref = _single(BlockedBloomFilter, [k for s in shards for k in s], 3000)
        assert merged.to_bytes() == ref.to_bytes()

    @pytest.mark.parametrize(
        "other",
        [
            lambda: BloomFilter(2000),
            lambda: BloomFilter(1000, seed=1),
            lambda: BlockedBloomFilter(1000),
            lambda: BloomFilter(1000, 0.001),
        ],
        ids=["size", "seed", "layout", "hashes"],
    )
    def test_incompatible_partials_raise(self, client: Any, other: Any) -> None:
        a, b = BloomFilter(1000), other()
        a.add("x")
        b.add("y")
        with pytest.raises(IncompatibleFiltersError):
            bkd.reduce_filters([a, BloomFilter(1000), b])
        # as Delayed partials built on the workers, too
        with pytest.raises(IncompatibleFiltersError):
            bkd.reduce_filters([delayed(BloomFilter)(1000), delayed(other)()])

    def test_inputs_are_not_mutated(self, client: Any) -> None:
        a, b = BloomFilter(100), BloomFilter(100)
        a.add(1)
        b.add(2)
        before = a.to_bytes()
        bkd.reduce_filters([a, b], split_every=2)
        assert a.to_bytes() == before

    def test_merge_is_preferred_to_union(self, local: None) -> None:
        class Summing:
            def __init__(self, n: int) -> None:
                self.n = n

            def merge(self, other: Summing) -> None:
                self.n += other.n

            def union(self, *others: Summing) -> Summing:
                raise AssertionError("union used although merge exists")

        class Returning:
            def __init__(self, n: int) -> None:
                self.n = n

            def merge(self, other: Returning) -> Returning:
                return Returning(self.n + other.n)

        assert bkd._merge_objects([Summing(1), Summing(2), Summing(4)]).n == 7
        assert bkd._merge_objects([Returning(1), Returning(2), Returning(4)]).n == 7
        with pytest.raises(TypeError, match="merge"):
            bkd._merge_objects([object(), object()])


# ---- processes with different hash seeds --------------------------------------------------


class HashSeedTests:
    def test_workers_really_have_different_hash_seeds(self, client: Any) -> None:
        hashes = client.run(hash, "bloomkit")
        assert len(hashes) == 2 and len(set(hashes.values())) == 2

    def test_filters_cross_processes_unchanged(self, client: Any, rng: random.Random) -> None:
        keys = [f"k{rng.randrange(10**9)}" for _ in range(1000)]
        local = _single(BloomFilter, keys, 1000)
        for addr in client.scheduler_info()["workers"]:
            echoed = client.submit(operator.methodcaller("copy"), local, workers=[addr]).result()
            assert echoed.to_bytes() == local.to_bytes()
            member = client.submit(
                operator.methodcaller("contains_many", keys), local, workers=[addr], pure=False
            ).result()
            assert all(member)
            built = client.submit(_single, BloomFilter, keys, 1000, workers=[addr]).result()
            assert built.to_bytes() == local.to_bytes()


# ---- the Bloom-filter semi-join -----------------------------------------------------------


class SemiJoinTests:
    P = 0.01

    def _bound(self, n: int) -> float:
        return 2 * self.P * n + 6 * math.sqrt(self.P * n)

    def test_bag_keeps_every_member(self, client: Any, rng: random.Random) -> None:
        members = rng.sample(range(10**6), 2000)
        others = list(set(rng.sample(range(10**6, 2 * 10**6), 5000)))
        f = _single(BloomFilter, members, len(members), self.P)
        items = members + others
        rng.shuffle(items)
        kept = bkd.filter_membership(_bag(rng, items, rng.randint(1, 64)), f).compute()
        assert set(members) <= set(kept)
        assert len(kept) - len(members) <= self._bound(len(others))

    def test_dataframe_rows_and_series_keep_every_member(
        self, client: Any, rng: random.Random
    ) -> None:
        ids = np.array(rng.sample(range(10**7), 6000), dtype=np.int64)
        members, others = ids[:1500], ids[1500:]
        f = _single(BlockedBloomFilter, members, 1500, self.P)
        frame = pd.DataFrame({"id": ids, "payload": np.arange(len(ids))}).sample(
            frac=1.0, random_state=rng.randrange(2**32)
        )
        ddf = dd.from_pandas(frame, npartitions=rng.randint(1, 16))
        kept = bkd.filter_membership(ddf, f, on="id").compute()
        assert set(members.tolist()) <= set(kept["id"].tolist())
        assert len(kept) - len(members) <= self._bound(len(others))
        assert list(kept.columns) == ["id", "payload"]
        series_kept = bkd.filter_membership(ddf["id"], f).compute()
        assert sorted(series_kept.tolist()) == sorted(kept["id"].tolist())

    def test_array_and_semi_join_keep_every_member(
        self, client: Any, rng: random.Random
    ) -> None:
        left = np.array(rng.sample(range(10**6), 4000), dtype=np.int64)
        right = left[rng.randint(0, 1000) : 2000]
        kept = bkd.filter_membership(
            _array(rng, left, rng.randint(1, 30)), _single(BloomFilter, right, len(right))
        ).compute()
        assert set(right.tolist()) <= set(kept.tolist())
        left_df = dd.from_pandas(pd.DataFrame({"k": left, "v": 1}), npartitions=4)
        right_df = dd.from_pandas(pd.DataFrame({"k": right}), npartitions=3)
        joined = bkd.semi_join(left_df, right_df, on="k").compute()
        assert set(right.tolist()) <= set(joined["k"].tolist())
        assert len(joined) - len(right) <= self._bound(len(left) - len(right))

    def test_nulls_never_match(self, client: Any, rng: random.Random) -> None:
        f = _single(BloomFilter, ["a", "b"], 10)
        kept = bkd.filter_membership(_series(rng, ["a", None, "c", "b", None], 2, "string"), f)
        assert sorted(kept.compute().tolist()) == ["a", "b"]

    def test_filter_is_broadcast_once_to_every_worker(
        self, client: Any, rng: random.Random
    ) -> None:
        # a seed of its own, so that copies left on the workers by earlier
        # tests (released asynchronously) are not counted
        f = _single(BloomFilter, range(100), 100, seed=rng.randrange(2**64))
        state = f.to_bytes()
        lazy = bkd.filter_membership(_bag(rng, list(range(300)), 12), f)
        assert sorted(lazy.compute()) == sorted(x for x in range(300) if x in f)

        def shipped_copies(dask_worker: Any) -> int:
            return sum(
                type(v).__name__ == "_FilterRef" and v.data == state
                for v in dask_worker.data.values()
            )

        assert list(client.run(shipped_copies).values()) == [1, 1]
        del lazy

    def test_keyed_filter_needs_its_secret(self, client: Any, rng: random.Random) -> None:
        secret = rng.randbytes(16)
        f = _single(BloomFilter, ["x", "y"], 10, secret=secret)
        bag = db.from_sequence(["x", "q", "y"], npartitions=2)
        with pytest.raises(TypeError, match="secret"):
            bkd.filter_membership(bag, f)
        assert sorted(bkd.filter_membership(bag, f, secret=secret).compute()) == ["x", "y"]


class ArgumentTests:
    def test_bad_collections_are_refused(self, local: None) -> None:
        with pytest.raises(TypeError, match="Bag"):
            bkd.build([1, 2, 3])
        with pytest.raises(ValueError, match="1-d"):
            bkd.build(da.zeros((4, 4), chunks=2), capacity=10)
        ddf = dd.from_pandas(pd.DataFrame({"a": [1]}), npartitions=1)
        with pytest.raises(TypeError, match="column"):
            bkd.build(ddf, capacity=10)
        f = BloomFilter(10)
        with pytest.raises(TypeError, match="on="):
            bkd.filter_membership(ddf, f)
        with pytest.raises(TypeError, match="on="):
            bkd.filter_membership(ddf["a"], f, on="a")
        with pytest.raises(KeyError):
            bkd.filter_membership(ddf, f, on="b")
        with pytest.raises(TypeError, match="filter"):
            bkd.filter_membership(ddf["a"], {1, 2})

    def test_bad_parameters_fail_on_the_client(self, local: None) -> None:
        bag = db.from_sequence([1, 2], npartitions=1)
        with pytest.raises(ValueError, match="split_every"):
            bkd.build(bag, capacity=10, split_every=1)
        with pytest.raises(ValueError):
            bkd.build(bag, capacity=10, error_rate=1.5)
        with pytest.raises(TypeError, match="kind"):
            bkd.build(bag, kind=BloomFilter(10), capacity=10)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="merge"):
            bkd.build(bag, kind=int, capacity=10)
        with pytest.raises(ValueError, match="at least one"):
            bkd.reduce_filters([])

    def test_loads_of_a_delayed_build(self, client: Any) -> None:
        root = bkd.build_delayed(db.from_sequence(["a", "b"], npartitions=2), capacity=10)
        f = bloomkit.loads(root.compute())
        assert "a" in f and "b" in f
