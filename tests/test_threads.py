"""R31: eight threads with ``sys.setswitchinterval(1e-5)`` adding, growing,
clearing and querying one object: no exception, no false negative, no lost
count, no hang.

Every mutable structure is hammered through every path that can give the GIL
away: per-item calls, list batches, numpy batches (hashed and probed without
the GIL), iterators, and a ``key=`` function written in Python (every key then
runs Python code, so another thread may run between any two keys).  One
thread meanwhile clears, unions, merges, copies and serializes the object.

A clear legitimately removes keys, so a key found absent counts as a false
negative only if no clear overlapped its add and its check: the clearing
thread bumps an epoch before and after each clear (odd while one runs), and
a worker compares the epoch read before its add with the one read after its
check.  Issue #23 item 3 (ScalableBloomFilter raised "bad link N shape" and
lost the rest of an add_many when another thread grew the chain while the
facade sized the new link) has its own test below, as does closing a mapped
object while other threads run GIL-free batches on it (a segmentation fault
before the batches pinned the state).
"""

from __future__ import annotations

import pickle
import random
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import bloomkit
import kind_list
from bloomkit import (
    BloomFilter,
    CountingBloomFilter,
    CountMinSketch,
    QuotientFilter,
    ScalableBloomFilter,
    TinyLFU,
    TopK,
)

np = pytest.importorskip("numpy")

THREADS = 8
SWITCH_INTERVAL = 1e-5
JOIN_TIMEOUT = 600.0  # seconds; a thread still running then is a hang (a starved waiter)


@pytest.fixture(autouse=True)
def fast_switching() -> Iterator[None]:
    """Switch threads every 10 us instead of every 5 ms (R31)."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def run_threads(work: Callable[[int], None], n: int = THREADS) -> None:
    """Run work(0), ..., work(n - 1) in n threads released together; fail
    with every exception they raised, or if one of them hangs."""
    barrier = threading.Barrier(n)
    errors: list[BaseException] = []

    def body(t: int) -> None:
        barrier.wait()
        try:
            work(t)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(t,), daemon=True) for t in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(JOIN_TIMEOUT)
    assert not any(th.is_alive() for th in threads), "a thread hangs"
    if errors:
        raise AssertionError(f"{len(errors)} thread(s) raised: {errors[:4]!r}") from errors[0]


class Epoch:
    """Counts clears: odd while one runs (see the module docstring)."""

    def __init__(self) -> None:
        self.value = 0

    def around(self, op: Callable[[], object]) -> None:
        self.value += 1  # only the maintenance thread writes it
        try:
            op()
        finally:
            self.value += 1

    def quiet_since(self, start: int) -> bool:
        """No clear overlapped the interval that began when value was start."""
        return start % 2 == 0 and self.value == start


def py_key(k: object) -> object:
    """A key= function in Python: hashing any key now runs Python code."""
    return k


class SlowKey(str):
    """A str whose __hash__ and __eq__ run Python code (thread switches)."""

    __slots__ = ()

    def __hash__(self) -> int:
        return str.__hash__(self)

    def __eq__(self, other: object) -> bool:
        return str.__eq__(self, other)


# ---- the structures ------------------------------------------------------------------


Spec = kind_list.ThreadSpec  # how to build one structure (each kind's recipe)
_THREADS, HAMMER_EXEMPT = kind_list.cases("threads")  # exempt: the test that covers it
SPECS: list[Spec] = [spec for name in sorted(_THREADS) for spec in _THREADS[name]]


def test_the_hammer_covers_every_kind() -> None:
    """A new kind gets ThreadSpecs in its recipe or an exemption naming its own test."""
    assert len({s.name for s in SPECS}) == len(SPECS), "ThreadSpec names are test ids"
    kind_list.assert_covers(_THREADS, HAMMER_EXEMPT)


MODES = ["clear", "remove"]  # what the structure does besides adding (remove: no clear)


def _cases() -> list[Any]:
    out = []
    for spec in SPECS:
        for mode in MODES:
            if mode == "remove" and not spec.removes:
                continue
            for keyfunc in (None, py_key):
                kname = "key=py" if keyfunc else "plain"
                out.append(pytest.param(spec, mode, keyfunc, id=f"{spec.name}-{mode}-{kname}"))
    return out


ROUNDS = 6
PER_ROUND = 40  # keys per path per round


def _worker_keys(t: int, r: int, path: int) -> list[int]:
    base = t * 10**9 + r * 10**6 + path * 10**4
    return list(range(base, base + PER_ROUND))


class HammerTests:
    """Seven workers add their own keys through every path and check them at
    once; the eighth clears (or, for structures that remove, does not: a
    removal of a key that a clear already took could take another key's
    counters), unions, merges, copies and serializes."""

    @pytest.mark.parametrize(("spec", "mode", "keyfunc"), _cases())
    def test_no_exception_no_false_negative(self, spec: Spec, mode: str,
                                            keyfunc: Any) -> None:
        f = spec.build(keyfunc)
        epoch = Epoch()
        done = threading.Event()
        workers_left = [THREADS - 1]
        lock = threading.Lock()
        false_negatives: list[tuple[str, int]] = []

        def check(path: str, keys: list[int], answers: list[bool], start: int) -> None:
            if epoch.quiet_since(start):
                pairs = zip(keys, answers, strict=True)
                false_negatives.extend((path, k) for k, a in pairs if not a)

        def worker(t: int) -> None:
            try:
                for r in range(ROUNDS):
                    mine: list[int] = []
                    keys = _worker_keys(t, r, 0)  # per item
                    for k in keys:
                        start = epoch.value
                        f.add(k)
                        check("add/in", [k], [spec.present(f, k)], start)
                    mine += keys
                    keys = _worker_keys(t, r, 1)  # a list
                    start = epoch.value
                    f.add_many(keys)
                    check("add_many(list)", keys, spec.present_many(f, keys), start)
                    mine += keys
                    keys = _worker_keys(t, r, 2)  # a numpy array: GIL-free without key=
                    arr = np.array(keys, dtype=np.int64)
                    start = epoch.value
                    f.add_many(arr)
                    check("add_many(numpy)", keys, spec.present_many(f, arr), start)
                    mine += keys
                    keys = _worker_keys(t, r, 3)  # an iterator
                    start = epoch.value
                    f.add_many(iter(keys))
                    check("add_many(iter)", keys, [spec.present(f, k) for k in keys], start)
                    mine += keys
                    if mode == "remove":
                        for k in mine[::2]:
                            f.remove(k)  # ours, added once, and no clear: must be there
                        if spec.name == "counting":
                            f.remove_many(mine[1::2])
                        else:
                            for k in mine[1::2]:
                                assert f.discard(k)
            finally:
                with lock:
                    workers_left[0] -= 1
                    if workers_left[0] == 0:
                        done.set()

        def maintainer() -> None:
            sibling = spec.build(keyfunc)
            sibling.add_many(range(-500, 0))
            rnd = random.Random(THREADS)
            while not done.is_set():
                op = rnd.randrange(6)
                if op == 0 and mode == "clear":
                    epoch.around(f.clear)
                elif op == 1 and spec.unite is not None and mode == "clear":
                    spec.unite(f, sibling)
                elif op == 2:
                    g = f.copy()
                    assert type(g) is type(f)
                elif op == 3:
                    type(f).from_bytes(f.to_bytes(), key=keyfunc)
                elif op == 4 and keyfunc is None:
                    pickle.loads(pickle.dumps(f))
                else:
                    spec.present_many(f, np.arange(-100, 100, dtype=np.int64))
                    len(f) if hasattr(f, "__len__") else f.total

        def work(t: int) -> None:
            if t == 0:
                maintainer()
            else:
                worker(t)

        run_threads(work)
        assert not false_negatives, f"{len(false_negatives)} false negatives: " \
            f"{false_negatives[:5]}"
        if mode == "remove":
            assert len(f) == 0  # every add and every remove counted, none lost


class ScalableGrowthTests:
    """Issue #23 item 3 (R31): growth sized its link by calling the facade
    (Python) and then built it at the index the chain had by then; another
    thread growing meanwhile gave ``ValueError: bad link N shape`` from add
    and add_many (16 in 8 rounds of this test at 1e-5 before the fix; an
    add_many that raised lost its remaining keys)."""

    @pytest.mark.parametrize("layout", ["classic", "blocked"])
    @pytest.mark.parametrize("keyfunc", [None, py_key], ids=["plain", "key=py"])
    def test_growth_under_threads(self, layout: str, keyfunc: Any) -> None:
        f = ScalableBloomFilter(50, 0.01, layout=layout, key=keyfunc)
        adders = THREADS - 2
        per_thread = 3000
        trues = [0] * THREADS
        done = threading.Event()
        left = [adders]
        lock = threading.Lock()
        misses: list[int] = []

        def keys_of(t: int) -> range:
            return range(t * 10**9, t * 10**9 + per_thread)

        def adder(t: int) -> None:
            try:
                keys = keys_of(t)
                for i in range(0, per_thread, 100):
                    chunk = keys[i:i + 100]
                    path = (i // 100) % 4
                    if path == 0:
                        trues[t] += sum(f.add(k) for k in chunk)
                    elif path == 1:
                        trues[t] += f.add_many(list(chunk))
                    elif path == 2:
                        trues[t] += f.add_many(np.array(chunk, dtype=np.int64))
                    else:
                        trues[t] += f.add_many(iter(chunk))
                    got = f.contains_many(np.array(chunk, dtype=np.int64))
                    misses.extend(k for k, a in zip(chunk, got, strict=True) if not a)
            finally:
                with lock:
                    left[0] -= 1
                    if left[0] == 0:
                        done.set()

        def querier(t: int) -> None:
            # GIL-free queries that keep overlapping: growth must still get
            # through (the gate of bkpy_state_wait_pins), else this hangs.
            probe = np.arange(10**9, 10**9 + per_thread, dtype=np.int64)
            while not done.is_set():
                f.contains_many(probe)
                f.num_links  # noqa: B018 -- a read between batches

        run_threads(lambda t: adder(t) if t < adders else querier(t))
        assert not misses, f"{len(misses)} false negatives"
        every = np.concatenate([np.array(keys_of(t), dtype=np.int64) for t in range(adders)])
        assert all(f.contains_many(every))
        assert len(f) == sum(trues)  # each key counted once, by the add that said True
        assert f.num_links >= 8


def _raise_on_bad(k: object) -> object:
    if k == "bad":
        raise ValueError("bad key")
    return k


class QuotientRollbackTests:
    """QuotientFilter.add_many is all or nothing: a key that fails takes back
    what the call inserted.  If another thread cleared the filter (while the
    key= function ran) and added equal fingerprints, the rollback removed
    those instead: 3072 false negatives in 300 rounds before the rollback
    learnt to forget a log that a clear emptied."""

    def test_rollback_after_a_concurrent_clear(self) -> None:
        q = QuotientFilter(100_000, 0.01, key=_raise_on_bad)
        keys = list(range(2000))
        stop = threading.Event()
        false_negatives = [0]

        def failing_batches() -> None:
            while not stop.is_set():
                with pytest.raises(ValueError, match="bad key"):
                    q.add_many([*keys, "bad"])  # the second chunk fails: rollback

        def clear_and_add() -> None:
            try:
                for _ in range(150):
                    q.clear()
                    q.add_many(keys[:1500])
                    false_negatives[0] += sum(1 for k in keys[:1500] if k not in q)
            finally:
                stop.set()

        run_threads(lambda t: failing_batches() if t == 0 else clear_and_add(), n=2)
        assert false_negatives[0] == 0
        q.clear()
        with pytest.raises(ValueError):
            q.add_many([*keys, "bad"])
        assert len(q) == 0  # a failed batch alone still leaves nothing behind


class CountMinNoLostCountTests:
    """GIL-free add_many batches add with atomics; a merge (a plain
    read-modify-write) and per-item adds wait for them or use atomics too: no
    count is lost, so every estimate stays >= the true count (R5, R31)."""

    def test_concurrent_adds_and_merges(self) -> None:
        f = CountMinSketch(2048, 4)
        keys = np.arange(200, dtype=np.int64)
        other = CountMinSketch(2048, 4)
        other.add_many(np.arange(10**6, 10**6 + 50, dtype=np.int64))
        merges = [0]

        def work(t: int) -> None:
            for _ in range(20):
                if t == 0:
                    f.merge(other)
                    merges[0] += 1
                elif t % 3 == 1:
                    f.add_many(keys)  # GIL-free
                elif t % 3 == 2:
                    f.add_many(keys.tolist())
                else:
                    for k in keys[:50].tolist():
                        f.add(k, 4)

        run_threads(work)
        per_key = {k: 0 for k in range(200)}
        for t in range(1, THREADS):
            for k in range(200):
                if t % 3 in (1, 2):
                    per_key[k] += 20
                elif k < 50:
                    per_key[k] += 80
        est = f.estimate_many(keys)
        assert all(int(e) >= per_key[k] for k, e in zip(range(200), est, strict=True))
        assert min(f.estimate_many(np.arange(10**6, 10**6 + 50))) >= merges[0]
        assert f.total == sum(per_key.values()) + 50 * merges[0]


class SketchThreadTests:
    def test_tinylfu(self) -> None:
        t_ = TinyLFU(1000, sample_factor=2)

        def work(t: int) -> None:
            rnd = random.Random(t)
            for r in range(300):
                ks = [rnd.randrange(2000) for _ in range(20)]
                if t == 0 and r % 50 == 0:
                    t_.clear()
                elif t == 1 and r % 20 == 0:
                    t_.age()
                t_.record_many(ks)
                t_.record(ks[0])
                assert 0 <= t_.estimate(ks[0]) <= 16  # 4-bit counters + the doorkeeper
                t_.admit(ks[0], ks[1])

        run_threads(work)

    def test_topk_counts_every_add(self) -> None:
        """TopK keeps a heap and a dict that change together: threads raised
        IndexError from an emptied heap and lost counts (about one run in two
        of a round below); now add runs under a lock.  Keys whose __hash__
        and __eq__ are Python code give other threads a chance inside every
        dict operation."""

        adds = 3000
        for _ in range(6):
            top = TopK(5, seed=1)

            def work(t: int, top: TopK = top) -> None:
                rnd = random.Random(t)
                for i in range(adds):
                    top.add(SlowKey(f"k{int(rnd.paretovariate(1.1)) % 300}"))
                    if i % 500 == 0:
                        top.heavy_hitters()

            run_threads(work)
            assert top.sketch.total == THREADS * adds
            assert len(top) == 5 and top.heavy_hitters()[0][0] == "k1"
        twin = pickle.loads(pickle.dumps(top))  # the lock is not pickled
        assert twin.heavy_hitters() == top.heavy_hitters()


_CLOSE_SCRIPT = """
import sys, threading
import numpy as np
import bloomkit
sys.setswitchinterval(1e-5)
kind, mode, path, form = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
keys = np.arange(1_000_000, dtype=np.int64)
if form == "bytekeys":  # Arrow-layout byte keys, also hashed without the GIL
    keys = bloomkit._core.ByteKeys(np.arange(0, 8 * keys.size + 1, 8, dtype=np.int64),
                                   keys.tobytes())
for r in range(6):
    m = bloomkit.open(path, mode)
    go = threading.Event()
    def batches():
        go.set()
        for _ in range(4):
            if mode == "r+":
                m.add_many(keys)
            elif kind == "cms":
                m.estimate_many(keys)
            else:
                m.contains_many(keys)
    threads = [threading.Thread(target=batches) for _ in range(3)]
    for t in threads:
        t.start()
    go.wait()
    bloomkit.close(m)  # unmaps the file while the batches may still run
    for t in threads:
        t.join()
print("ok")
"""


_UNION_CLOSE_SCRIPT = """
import sys, threading
import numpy as np
import bloomkit
# The default 5 ms: the main thread is not preempted between go.set() and
# the union's shape check, so the close lands in the union's wait.
sys.setswitchinterval(0.005)
kind, path = sys.argv[1], sys.argv[2]
keys = np.arange(2_000_000, dtype=np.int64)
f = bloomkit.load(path)
f.add_many(keys)
ref = f.to_bytes()[128:]
stop = threading.Event()
def batches():
    while not stop.is_set():
        f.add_many(keys)  # GIL-free; for the Bloom filter it sets no new bit
t = threading.Thread(target=batches)
t.start()
for r in range(20):
    g = bloomkit.open(path, "r")
    go = threading.Event()
    def closer(g=g, go=go):
        go.wait()
        bloomkit.close(g)
    c = threading.Thread(target=closer)
    c.start()
    go.set()
    try:
        if kind == "bloom":
            f |= g
        else:
            f.merge(g)
    except bloomkit.IncompatibleFiltersError:
        pass  # g was closed first: its small stand-in does not match
    c.join()
    if kind == "bloom":
        assert f.to_bytes()[128:] == ref, "bits from outside the map"
stop.set()
t.join()
print("ok")
"""


class MappedCloseTests:
    """Closing a mapped object while other threads run GIL-free batches on it:
    _detach waits for them (the batches pin the state).  Before, the map was
    unmapped under them: a segmentation fault, so each case runs in a
    subprocess."""

    @pytest.mark.parametrize(("kind", "mode", "form"), [
        ("bloom", "r", "numpy"), ("bloom", "r+", "numpy"), ("counting", "r", "numpy"),
        ("cms", "r", "numpy"), ("cms", "r+", "numpy"), ("scalable", "r", "numpy"),
        ("bloom", "r", "bytekeys"), ("cms", "r+", "bytekeys"),
    ])
    def test_close_during_batches(self, tmp_path: Path, kind: str, mode: str,
                                  form: str) -> None:
        build: dict[str, Callable[[], Any]] = {
            "bloom": lambda: BloomFilter(1_000_000, 0.01),
            "counting": lambda: CountingBloomFilter(1_000_000, 0.01),
            "cms": lambda: CountMinSketch(1 << 18, 4),
            "scalable": lambda: ScalableBloomFilter(1000, 0.01),
        }
        f = build[kind]()
        f.add_many(np.arange(5000, dtype=np.int64))
        path = tmp_path / f"{kind}.bk"
        f.save(path)
        proc = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(_CLOSE_SCRIPT), kind, mode, str(path), form],
            capture_output=True, text=True, timeout=600,
        )
        assert proc.returncode == 0 and proc.stdout.strip() == "ok", \
            (proc.returncode, proc.stderr[-2000:])
        if mode == "r+":
            assert bloomkit.verify(path)  # sealed after the batches: not called corrupt

    @pytest.mark.parametrize("kind", ["bloom", "cms"])
    def test_union_with_an_object_being_closed(self, tmp_path: Path, kind: str) -> None:
        """``f |= g`` / ``f.merge(g)`` waits for f's GIL-free batches with the
        GIL released; another thread may close g meanwhile.  The shapes were
        checked before the wait, so the union then read g's small stand-in
        as if it were g: a heap-buffer-overflow (a segmentation fault in 2
        runs of 2, and ASan's report in 4 of 4).  Now the shapes are checked
        after the wait: IncompatibleFiltersError."""
        f = BloomFilter(200_000, 0.01) if kind == "bloom" else CountMinSketch(1 << 16, 4)
        f.add_many(np.arange(1000, dtype=np.int64))
        path = tmp_path / f"{kind}.bk"
        f.save(path)
        proc = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(_UNION_CLOSE_SCRIPT), kind, str(path)],
            capture_output=True, text=True, timeout=600,
        )
        assert proc.returncode == 0 and proc.stdout.strip() == "ok", \
            (proc.returncode, proc.stderr[-2000:])
