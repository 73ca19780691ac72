"""TopK in C (bk_topk.c, py_topk.c; issue #21.2): the same answers as the
pure-Python TopK it replaced, update() counting as add() one key at a time
for every input form (same sketch bytes, candidates offered once per
distinct key per chunk), top-100 recall, bounded memory, pickles old and new, and
bad input (R1, R8, R31)."""

from __future__ import annotations

import copy
import gc
import heapq
import json
import pickle
import random
import shutil
import tracemalloc
import weakref
from collections import Counter
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import kind_list
import native_c
from bloomkit import CountMinSketch, TopK
from bloomkit._core import ByteKeys

PICKLES = Path(__file__).parent / "format" / "pickles"
NATIVE = Path(__file__).resolve().parent.parent / "src" / "bloomkit" / "_native"


class _PyTopK:
    """The pure-Python TopK of bloomkit before #21 (sketch.py at cff52a1),
    without its lock: the model the C version must match, ties included."""

    def __init__(self, k: int, sketch: CountMinSketch[Any]) -> None:
        self.k = k
        self.sketch = sketch
        self._top: dict[Hashable, int] = {}
        self._heap: list[tuple[int, int, Hashable]] = []
        self._tick = 0

    def _push(self, key: Hashable, est: int) -> None:
        self._tick += 1
        heapq.heappush(self._heap, (est, self._tick, key))

    def _min(self) -> tuple[int, Hashable]:
        while True:
            est, _, key = self._heap[0]
            if self._top.get(key) == est:
                return est, key
            heapq.heappop(self._heap)

    def add(self, key: Hashable, count: int = 1) -> int:
        est: int = self.sketch.add(key, count)
        top = self._top
        if key in top or len(top) < self.k:
            top[key] = est
            self._push(key, est)
        else:
            low, low_key = self._min()
            if est > low:
                del top[low_key]
                heapq.heappop(self._heap)
                top[key] = est
                self._push(key, est)
        return est

    def heavy_hitters(self) -> list[tuple[Hashable, int]]:
        return sorted(self._top.items(), key=lambda kv: (-kv[1], repr(kv[0])))[: self.k]


def zipf(n: int, universe: int, seed: int, s: float = 1.0) -> np.ndarray:
    w = 1.0 / np.arange(1, universe + 1, dtype=np.float64) ** s
    cdf = np.cumsum(w)
    cdf /= cdf[-1]
    u = np.random.default_rng(seed).random(n)
    return np.minimum(np.searchsorted(cdf, u, side="right"), universe - 1).astype(np.int64)


def _key(i: int) -> Hashable:
    """Ints, str and bytes that the sketch and a dict tell apart alike."""
    return [i, f"s{i}", f"b{i}".encode()][i % 3]


SKETCHES = {  # every branch of bk_cms_add_estimate(_many)
    "default": lambda: CountMinSketch(97, 4, seed=3),
    "conservative": lambda: CountMinSketch(97, 4, seed=3, conservative=True),
    "counter64": lambda: CountMinSketch(97, 4, seed=3, counter_bits=64),
    "row_hash0": lambda: CountMinSketch(97, 4, seed=3, row_hash=0),
}


def _topk_state(top: TopK) -> bytes:
    """The sketch's bytes, then every candidate (key, estimate, tick) and the tick."""
    return bytes(top.sketch.to_bytes()) + repr((top._entries(), top._tick)).encode()


def _entries(top: TopK) -> list[tuple[Any, int, int]]:
    """Slots as (key as a plain int/str/bytes, estimate, tick), slot order."""
    return [(k.item() if isinstance(k, np.generic) else k, e, t) for k, e, t in top._entries()]


class ModelTests:
    @pytest.mark.parametrize("shape", list(SKETCHES))
    def test_same_answers_as_the_python_topk(self, shape: str, rng: random.Random) -> None:
        for _ in range(4):
            k = rng.choice([1, 3, 10, 40])
            top, model = TopK(k, sketch=SKETCHES[shape]()), _PyTopK(k, SKETCHES[shape]())
            for _ in range(rng.randrange(1, 3000)):
                key = _key(int(rng.paretovariate(1.1)) % 200)
                count = rng.choice([1, 1, 1, 0, 2, 7])
                assert top.add(key, count) == model.add(key, count)
                if rng.random() < 0.01:
                    assert top.heavy_hitters() == model.heavy_hitters()
            assert top.heavy_hitters() == model.heavy_hitters()
            assert len(top) == len(model._top)
            assert all(key in top for key in model._top)
            assert top.sketch == model.sketch

    def test_a_cleared_sketch_lowers_a_tracked_estimate(self) -> None:
        """A tracked key's estimate can fall (sift up as well as down)."""
        top, model = TopK(3, sketch=CountMinSketch(64, 3)), _PyTopK(3, CountMinSketch(64, 3))
        for t in (top, model):
            for key in ["a"] * 5 + ["b"] * 4 + ["c"] * 3:
                t.add(key)
            t.sketch.clear()
            for key in ["c", "d", "d", "a", "e", "e", "e"]:
                t.add(key)
        assert top.heavy_hitters() == model.heavy_hitters()


class BatchTests:
    """update(keys) counts each distinct key of a chunk (up to 65,536
    events) once: the sketch ends byte for byte as after add() on each key;
    the candidates are offered once per distinct key per chunk, so they can
    differ from the add() loop only in eviction order within a chunk.  A
    conservative sketch (order-dependent counters) is the add() loop
    exactly."""

    @pytest.mark.parametrize("shape", list(SKETCHES))
    def test_every_form_counts_as_the_loop(self, shape: str, rng: random.Random) -> None:
        # 150,000 events: three chunks, keys spanning their boundaries.
        seed = rng.randrange(2**32)
        arr = zipf(150_000, 3_000, seed, s=1.1)
        keys = arr.tolist()
        loop = TopK(25, sketch=SKETCHES[shape]())
        for key in keys:
            loop.add(key)
        forms: dict[str, Any] = {
            "list": keys, "tuple": tuple(keys), "iterator": iter(keys), "numpy": arr,
            "numpy strided": np.repeat(arr, 2)[::2], "array-like uint32": arr.astype(np.uint32),
            "generator": (k for k in keys),
        }
        pa = pytest.importorskip("pyarrow")
        forms["pyarrow"] = pa.array(arr)
        forms["pyarrow chunked"] = pa.chunked_array([arr[:1000], arr[1000:66_001], arr[66_001:]])
        first = None
        for name, form in forms.items():
            top = TopK(25, sketch=SKETCHES[shape]())
            top.update(form)
            assert top.sketch.to_bytes() == loop.sketch.to_bytes(), (name, seed)
            if shape == "conservative":
                assert _entries(top) == _entries(loop), (name, seed)
            # Every form is chunked alike: the same candidates.
            first = first if first is not None else _entries(top)
            assert _entries(top) == first, (name, seed)
            truth = Counter(keys)
            for key, est in top._items():
                assert truth[int(key)] <= est <= top.sketch.estimate(key), (name, seed, key)

    @pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
    def test_heavy_hitters_equal_the_loop_on_zipf_streams(self, seed: int) -> None:
        for s in (1.0, 1.2):
            keys = zipf(200_000, 100_000, seed, s=s).tolist()
            loop = TopK(50)
            for key in keys:
                loop.add(key)
            top = TopK(50)
            top.update(keys)
            assert top.heavy_hitters() == loop.heavy_hitters(), (seed, s)
            assert top.sketch.to_bytes() == loop.sketch.to_bytes()

    @pytest.mark.parametrize("shape", ["default", "conservative"])
    def test_arrow_counts_as_the_list_of_its_values(self, shape: str,
                                                    rng: random.Random) -> None:
        """update(an Arrow column) equals update(its to_pylist() without the
        nulls) exactly: sketch bytes, candidates, their ticks and key objects
        (int, str, bytes as to_pylist gives them), across Arrow chunks, null
        runs and keys past the list's inline path (non-ASCII str, ints past
        int64, bools), which cut the list's chunks: 150,000 events."""
        pa = pytest.importorskip("pyarrow")
        seed = rng.randrange(2**32)
        ranks = zipf(150_000, 3_000, seed, s=1.1).tolist()
        columns: dict[str, tuple[Any, list[Any]]] = {
            "str": (pa.string(), [f"k{r}" if r % 4 else f"k{r}é" for r in ranks]),
            "string_view": (pa.string_view(), [f"é{r}" * (r % 9) for r in ranks]),
            "large_binary": (pa.large_binary(), [b"b%d" % r for r in ranks]),
            "uint64": (pa.uint64(), [r if r % 3 else 2**63 + r for r in ranks]),
            "int8": (pa.int8(), [r % 256 - 128 for r in ranks]),
            "bool": (pa.bool_(), [r % 3 == 0 for r in ranks]),
        }
        for name, (typ, values) in columns.items():
            with_nulls = [None if (i % 17 == 3 or 5000 <= i < 7100) else v
                          for i, v in enumerate(values)]
            arr = pa.array(with_nulls, type=typ)
            cut = rng.randrange(1, 150_000)
            for form in (arr, pa.chunked_array([arr[:cut], arr[cut:]]),
                         pa.array(with_nulls, type=typ).dictionary_encode()
                         if name == "str" else arr.slice(0)):
                a, b = TopK(25, sketch=SKETCHES[shape]()), TopK(25, sketch=SKETCHES[shape]())
                a.update([v for v in with_nulls if v is not None])
                b.update(form)
                assert _topk_state(a) == _topk_state(b), (name, seed, cut)
                assert {type(k) for k, _ in b._items()} == {type(v) for v in values}, name

    def test_keys_spanning_chunk_boundaries(self) -> None:
        """A key counted in two chunks ends with both counts; one that fills
        a chunk and returns in the next keeps its slot; a key evicted within
        a chunk and back in the next enters again."""
        top = TopK(2, sketch=CountMinSketch(4096, 4))
        top.update(["a"] * 65_535 + ["b", "b", "c"] + ["a"] * 10 + ["c"] * 5)
        assert top.sketch.total == 65_553
        assert dict(top._items()) == {"a": 65_545, "c": 6}
        top.update(["b"] * 3)
        assert dict(top._items()) == {"a": 65_545, "c": 6}  # b (5) stays below c
        top.update(["b"] * 2)
        assert dict(top._items()) == {"a": 65_545, "b": 7}

    def test_chunks_and_mixed_slow_keys(self) -> None:
        """Keys past the inline fast path (a str subclass, numpy scalars,
        big ints) in the middle of list chunks, at chunk edges."""

        class S(str):
            pass

        keys: list[Any] = []
        for i in range(70_000):
            k = i % 97
            keys.append([k, S(f"s{k}"), np.int64(k), 2**70 + k, f"s{k}"][i % 5 if i % 1023 else 1])
        loop = TopK(10, sketch=CountMinSketch(128, 3))
        for key in keys:
            loop.add(key)
        top = TopK(10, sketch=CountMinSketch(128, 3))
        top.update(keys)
        assert top.sketch.to_bytes() == loop.sketch.to_bytes()
        # 291 keys in 128 columns: collisions everywhere, so the candidates
        # may differ from the loop's; each reports an estimate no greater
        # than the sketch's.
        assert len(top) == 10
        assert all(n <= top.sketch.estimate(k) for k, n in top._items())

    def test_a_key_that_changes_the_list_while_it_is_counted(self) -> None:
        """The list path borrows its keys by index (no reference per
        distinct key) until a slow key may run Python code: that key's
        __index__ replaces or removes every item, freeing the keys borrowed
        before it.  The candidates must still report the objects that were
        counted, and the sketch count as a loop of add() over the same
        sequence does (a list iterator sees the changed items too)."""

        class Mutates:
            def __init__(self, keys: list[Any], how: str) -> None:
                self.keys, self.how = keys, how

            def __index__(self) -> int:
                if self.how == "replace":
                    self.keys[:] = ["".join(["z", "z"]) for _ in self.keys]
                else:
                    self.keys.clear()
                return 7

        def fresh(how: str) -> list[Any]:
            # Keys made at run time: the list holds their only reference.
            # 3,301 keys: one chunk of 4,096 events, still open when the
            # slow key comes.
            keys: list[Any] = ["".join(["w", str(i % 3)]) for i in range(3301)]
            keys[300] = Mutates(keys, how)
            return keys

        for how in ("replace", "clear"):
            loop = TopK(10, sketch=CountMinSketch(256, 3))
            for key in fresh(how):
                loop.add(key)
            top = TopK(10, sketch=CountMinSketch(256, 3))
            keys = fresh(how)
            top.update(keys)
            gc.collect()
            assert top.sketch.to_bytes() == loop.sketch.to_bytes(), how
            got = {(k if isinstance(k, str) else 7): n for k, n in top._items()}
            want = {"w0": 100, "w1": 100, "w2": 100, 7: 1}
            if how == "replace":
                want["zz"] = 3000
            assert got == want, how

    def test_bytes_forms(self) -> None:
        words = [f"w{int(x)}".encode() for x in zipf(3000, 200, 5)]
        loop = TopK(8, sketch=CountMinSketch(64, 3))
        for w in words:
            loop.add(w)
        arr = np.array(words, dtype="S6")
        offsets = np.cumsum([0] + [len(w) for w in words]).astype(np.int64)
        first = None
        for form in (words, arr, ByteKeys(offsets, b"".join(words))):
            top = TopK(8, sketch=CountMinSketch(64, 3))
            top.update(form)
            assert top.sketch.to_bytes() == loop.sketch.to_bytes()
            got = [(bytes(k), e, t) for k, e, t in top._entries()]
            first = first if first is not None else got
            assert got == first

    def test_key_function(self) -> None:
        class Item:
            def __init__(self, name: str) -> None:
                self.name = name

        items = [Item(f"n{int(x)}") for x in zipf(70_000, 1000, 9)]
        loop = TopK(5, sketch=CountMinSketch(4096, 3, key=lambda it: it.name))
        for it in items:
            loop.add(it)
        top = TopK(5, sketch=CountMinSketch(4096, 3, key=lambda it: it.name))
        top.update(items)
        assert top.sketch.to_bytes() == loop.sketch.to_bytes()
        assert [(k.name, n) for k, n in top.heavy_hitters()] == \
            [(k.name, n) for k, n in loop.heavy_hitters()]
        # The candidate reports the first object of its key in the chunk.
        first = {}
        for it in items:
            first.setdefault(it.name, it)
        assert all(first[k.name] is k for k, _ in top.heavy_hitters())
        assert Item(top.heavy_hitters()[0][0].name) in top  # identified through key=

    def test_one_key_encoding(self) -> None:
        """Keys are what the sketch counts: 1, True and numpy 1 are one key;
        the candidate reports the object it entered with."""
        top = TopK(3)
        top.add(1)
        top.add(True)
        top.update(np.array([1], dtype=np.int8))
        assert top.heavy_hitters() == [(1, 3)] and type(top.heavy_hitters()[0][0]) is int
        assert np.int64(1) in top and True in top and "1" not in top


class RecallTests:
    def test_top_100_of_a_zipf_stream(self) -> None:
        """Zipf(1.0) over 10^6 keys, 10^6 events (benchmarks/topk.py's
        stream): every reported key is a true top-100 key (ties at the edge
        count), with the default epsilon and delta."""
        arr = zipf(10**6, 10**6, 2026)
        truth = Counter(arr.tolist())
        edge = truth.most_common(100)[-1][1]
        top = TopK(100)
        top.update(arr)
        found = top.heavy_hitters()
        assert len(found) == 100
        assert sum(truth[int(k)] >= edge for k, _ in found) == 100
        assert all(n >= truth[int(k)] for k, n in found)  # estimates are upper bounds


class MemoryTests:
    def test_bounded_over_a_long_stream_of_distinct_keys(self) -> None:
        """10^6 distinct keys through TopK(50): the candidate arrays stop at
        50 slots (__sizeof__, C memory) and Python memory stops growing
        (tracemalloc: only the 50 key objects are held)."""
        top = TopK(50, sketch=CountMinSketch(1024, 4))
        top.update(list(range(1000)))
        size = top.__sizeof__()
        assert size < 50 * 64 + 4096
        tracemalloc.start()
        try:
            top.update([f"warm-{i}" for i in range(1000)])
            gc.collect()
            base = tracemalloc.get_traced_memory()[0]
            for r in range(10):
                top.update([f"k{r}-{i}" for i in range(100_000)])
            gc.collect()
            grown = tracemalloc.get_traced_memory()[0] - base
        finally:
            tracemalloc.stop()
        assert top.__sizeof__() == size
        assert len(top) == 50
        assert grown < 64 * 1024, grown

    def test_a_large_k_allocates_as_keys_arrive(self) -> None:
        top = TopK(2**30, sketch=CountMinSketch(16, 2))
        assert top.__sizeof__() < 4096
        top.update(range(1000))
        assert len(top) == 1000 and top.__sizeof__() < 1000 * 64 + 4096

    def test_a_cycle_through_a_key_is_collected(self) -> None:
        class Node(bytes):
            pass

        top = TopK(2)
        node = Node(b"n")
        top.add(node)
        node.top = top  # type: ignore[attr-defined]
        ref = weakref.ref(top)
        del top, node
        gc.collect()
        assert ref() is None


class PickleTests:
    def test_a_pickle_of_the_python_topk_loads_and_answers_as_before(self) -> None:
        """R8: tests/format/pickles/TopK_before_21.pickle was written by the
        pure-Python TopK; it loads, reports the same heavy hitters, and goes
        on exactly as the old class did (evictions included)."""
        m = json.loads((PICKLES / "TopK_before_21.json").read_text())

        def dec(k: Any) -> Any:
            return bytes.fromhex(k["bytes"]) if isinstance(k, dict) else k

        top = pickle.loads((PICKLES / "TopK_before_21.pickle").read_bytes())
        assert type(top) is TopK
        assert top.heavy_hitters() == [(dec(k), n) for k, n in m["heavy_hitters_at_save"]]
        for k in m["more_keys"]:
            top.add(dec(k))
        assert top.heavy_hitters() == [(dec(k), n) for k, n in m["heavy_hitters_after_more"]]
        assert top.sketch.total == m["total_after_more"]

    @pytest.mark.parametrize("protocol", range(2, pickle.HIGHEST_PROTOCOL + 1))
    def test_round_trip_then_same_future(self, protocol: int, rng: random.Random) -> None:
        top = TopK(5, sketch=CountMinSketch(64, 3, seed=4))
        for _ in range(500):
            top.add(_key(int(rng.paretovariate(1.2)) % 30))
        for twin in (pickle.loads(pickle.dumps(top, protocol)), copy.deepcopy(top),
                     copy.copy(top)):
            assert twin._entries() == top._entries() and twin.k == 5
            more = [_key(int(rng.paretovariate(1.1)) % 40) for _ in range(300)]
            a, b = copy.deepcopy(top), twin
            for key in more:
                a.add(key)
                b.add(key)
            assert a.heavy_hitters() == b.heavy_hitters()

    def test_a_pickle_naming_the_old_module_loads(self, rng: random.Random) -> None:
        """TopK lived in bloomkit.sketch until #30: a pickle written then names
        bloomkit.sketch.TopK and bloomkit.sketch._restore_topk; it loads into
        the same TopK (protocol 0 spells each global as a text line, so the
        old names are written in exactly as the old class wrote them)."""
        top = TopK(4, sketch=CountMinSketch(64, 3, seed=2))
        for _ in range(300):
            top.add(_key(int(rng.paretovariate(1.2)) % 20))
        new = pickle.dumps(top, 0)
        assert b"cbloomkit.topk\nTopK\n" in new and b"cbloomkit.topk\nrestore_topk\n" in new
        old = new.replace(b"cbloomkit.topk\nTopK\n", b"cbloomkit.sketch\nTopK\n").replace(
            b"cbloomkit.topk\nrestore_topk\n", b"cbloomkit.sketch\n_restore_topk\n")
        twin = pickle.loads(old)
        assert type(twin) is TopK and twin._entries() == top._entries()
        assert twin.heavy_hitters() == top.heavy_hitters()

    def test_bad_states_are_refused(self) -> None:
        sk = CountMinSketch(16, 2)
        with pytest.raises(TypeError):
            TopK().__setstate__({"k": 2})
        with pytest.raises(ValueError, match="twice or there are more than k"):
            TopK()._restore(1, sk, [("a", 1, 0), ("b", 1, 1)], 2)
        with pytest.raises(ValueError, match="twice"):
            TopK()._restore(3, sk, [("a", 1, 0), ("a", 2, 1)], 2)
        with pytest.raises(TypeError):
            TopK()._restore(3, sk, [("a", 1)], 2)
        with pytest.raises(TypeError):
            TopK()._restore(3, sk, [(1.5, 1, 0)], 2)
        with pytest.raises(TypeError, match="CountMinSketch"):
            TopK()._restore(3, "sketch", [], 0)
        with pytest.raises(ValueError):
            TopK()._restore(0, sk, [], 0)
        with pytest.raises(TypeError, match="unpickled only"):
            TopK(2)._restore(3, sk, [], 0)


class BadInputTests:
    def test_constructor(self) -> None:
        for k, exc in ((0, ValueError), (-1, ValueError), (1.5, TypeError), (True, TypeError),
                       ("3", TypeError), (2**30 + 1, ValueError), (2**80, ValueError)):
            with pytest.raises(exc):
                TopK(k)
        with pytest.raises(TypeError, match="CountMinSketch"):
            TopK(3, sketch="x")  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            TopK(3, epsilon=2.0)
        shell = TopK()  # what unpickling starts from; nothing else works on it
        for use in (lambda: shell.add(1), lambda: shell.update([1]), lambda: 1 in shell,
                    lambda: shell.k, lambda: shell.heavy_hitters()):
            with pytest.raises(TypeError, match="without k"):
                use()
        assert len(shell) == 0

    def test_add_and_update(self) -> None:
        top = TopK(3)
        with pytest.raises(ValueError, match="non-negative"):
            top.add("a", -1)
        with pytest.raises(TypeError):
            top.add("a", "1")  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            top.add()  # type: ignore[call-arg]
        with pytest.raises(TypeError, match="not float"):
            top.add(1.5)
        for single in ("abc", b"abc", bytearray(b"abc")):
            with pytest.raises(TypeError, match="single"):
                top.update(single)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            top.update(5)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="buffer keys"):
            top.update(np.zeros(3))
        with pytest.raises(TypeError, match="buffer keys"):
            top.update(np.zeros((2, 2), dtype=np.int64))
        with pytest.raises(TypeError, match="not float"):
            1.5 in top  # noqa: B015
        assert top.sketch.total == 0 and len(top) == 0

    @pytest.mark.parametrize("form", [list, tuple, iter])
    def test_a_bad_key_stops_after_the_keys_before_it(self, form: Any) -> None:
        """As a loop of add() would: the keys before it are counted and
        offered, in the chunks already done and in the one it stops."""
        top = TopK(3)
        with pytest.raises(TypeError, match="not float"):
            top.update(form(["a", "b", "a", 2.5, "c"]))
        assert top.sketch.total == 3 and top.heavy_hitters() == [("a", 2), ("b", 1)]
        top = TopK(2)
        with pytest.raises(TypeError, match="not float"):
            top.update(form(["x"] * 70_000 + ["y", "y", 2.5, "z"]))
        assert top.sketch.total == 70_002 and top.heavy_hitters() == [("x", 70_000), ("y", 2)]

    def test_a_bad_key_through_key_function_and_a_raising_iterator(self) -> None:
        def keyf(x: Any) -> Any:
            if x == "bad":
                raise ValueError("bad key")
            return x

        top = TopK(3, sketch=CountMinSketch(256, 3, key=keyf))
        with pytest.raises(ValueError, match="bad key"):
            top.update(["a", "a", "bad", "b"])
        assert top.sketch.total == 2 and top.heavy_hitters() == [("a", 2)]

        def gen() -> Any:
            yield "a"
            yield "b"
            raise RuntimeError("stream broke")

        top = TopK(3)
        with pytest.raises(RuntimeError, match="stream broke"):
            top.update(gen())
        assert top.sketch.total == 2 and len(top) == 2

    def test_a_read_only_sketch(self, tmp_path: Path) -> None:
        import bloomkit

        path = tmp_path / "cms.bkf"
        CountMinSketch(32, 2).save(path)
        with bloomkit.open(path, "r") as sk:
            top = TopK(2, sketch=sk)
            with pytest.raises(TypeError, match="read-only"):
                top.add("a")
            with pytest.raises(TypeError, match="read-only"):
                top.update(["a"])
            assert len(top) == 0


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_plain_c_core(tmp_path: Path) -> None:
    """tests/native/test_bk_topk.c: bk_topk.c without Python, against a
    brute-force model (outcomes, evictions, minimum, index runs)."""
    out = native_c.build_and_run("topk", tmp_path)
    assert out.returncode == 0 and "test_bk_topk: ok" in out.stdout


# ---- the generic tests' recipe (tests/kind_list.py) ------------------------------------

RECIPES = [kind_list.Recipe(
    "TopK",  # no kind of its own (a heap over a CountMinSketch, saved as the sketch)
    hot=("add", "k"),
    threads="a heap and a dict changed together: SketchThreadTests.test_topk_counts_every_add",
    rewrites="no state of its own: its file is its CountMinSketch's, rewritten there",
    numpy=kind_list.NumpyCase(
        lambda: TopK(10_000, sketch=CountMinSketch(256, 4, seed=5)),
        lambda t, k: t.add(k), lambda t, ks: t.update(ks),
        lambda t, k: t.sketch.estimate(k) >= 1 and k in t,
        state=lambda t: bytes(t.sketch.to_bytes())),
    arrow=kind_list.ArrowCase(
        lambda: TopK(40, sketch=CountMinSketch(256, 4, seed=5)),
        lambda t, ks: t.update(ks), lambda t, ks: t.sketch.estimate_many(ks),
        state=lambda t: _topk_state(t)),
)]
