"""Side-by-side speed and space of bloomkit and its peers, in ONE process, on the same keys.

    python benchmarks/compare.py                    # n = 1e5, 1e6, 1e7; 5 repetitions
    python benchmarks/compare.py --n 1e6 --reps 7   # one size
    python benchmarks/compare.py --smoke            # tiny n, 1 repetition (CI)
    python benchmarks/compare.py --n 1e5 --clock cpu --only pyprobables bloomkit.BloomFilter

The output starts with the machine block of benchmarks/machine.py (CPU model, L1d/L2/L3
sizes, transparent huge pages, kernel, Python, load average), also stored as "machine" in the
JSON, and each size says where a filter of that size lives in this machine's caches: per-item
figures at 10^6 keys depend on it (a 1.2 MB filter fits a 2 MiB L2, not a 512 KiB one).

Peers (``pip install '.[bench]'``): abloom (its default mode and ``serializable=True``),
rbloom, pybloomfiltermmap3, fastbloom-rs and pyprobables.  A peer that is not installed is
skipped with a note; pyprobables (pure Python) runs only up to ``--slow-max-n``.

Static filters (issue #17): bloomkit.BinaryFuseFilter, and pyfusefilter's Fuse8 where it
imports.  pyfusefilter needs ``xxhash<4``, so run it from a virtual environment that sees
the rest of the system's packages:

    python -m venv --system-site-packages /tmp/pff
    /tmp/pff/bin/pip install pyfusefilter 'xxhash<4'
    /tmp/pff/bin/python benchmarks/compare.py --n 1e6 --only bloomkit.BinaryFuseFilter \
        pyfusefilter.Fuse8 bloomkit.BlockedBloomFilter

For them "batch add" is the build from all the keys (a list, or the numpy array), "add" is
absent, and `in` / "batch q" query the built filter.  Their ratios are to the fastest Bloom
peer; a static peer is never the reference of a Bloom filter's ratio.

What is measured, per n and key type (list of int, list of str, numpy int64 array):
  f.add(k)  ``for k in keys: f.add(k)`` into a fresh filter of capacity n, the form users
            write: the method is looked up on every call (issue #21: on a Python subclass
            of a C type that lookup-and-call used to cost 7-13 ns more; see percall.py)
  add       ``add = f.add; for k in keys: add(k)``, the bound method (for n > --sample, both
            add loops take the first --sample keys; the queries then use the batch-built
            filter, full at capacity)
  in hit    ``for k in keys: k in f`` over members
  in miss   the same over keys that were never added
  batch add the library's batch insert (``add_many``/``update``/``add_*_batch``), fresh filter
  batch q   the library's batch query (``contains_many``/``contains_*_batch``), over members
  floor     ``for k in keys: k in small_frozenset``, the interpreter's own cost of the loop
plus bytes per key (the bit array only) and the measured false-positive rate at capacity.
Every figure is the median over the repetitions (peers interleaved inside each repetition, so
drift on a shared machine hits everyone alike), in ns per key, with its ratio to the fastest
peer (a bloomkit figure below 1.00x is ahead of every peer).  Times are wall-clock
(``--clock wall``, the default) or the thread's CPU time (``--clock cpu``: on a loaded
machine, time spent descheduled is then not counted; caches shared with other processes still
are).  Results go to <out>/compare.json and <out>/compare.png; <out> is outside the
source tree unless told (``$BLOOMKIT_BENCH_OUT``, else <temp dir>/bloomkit-bench:
benchmarks/results/ holds the committed figures, written only with ``--out
benchmarks/results``).  Timings are never asserted.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
# Prefer the checkout's freshly built extension (python setup.py build_ext --inplace) over
# any installed copy; without one (a clean checkout after `pip install .`), use the install.
if any((REPO / "src" / "bloomkit" / f"_core{suffix}").exists() for suffix in EXTENSION_SUFFIXES):
    sys.path.insert(0, str(REPO / "src"))

import numpy as np  # noqa: E402

sys.path.insert(0, str(HERE))
import machine  # noqa: E402

OPS = ("add_call", "add", "in_hit", "in_miss", "batch_add", "batch_query")
OP_LABEL = {"add_call": "f.add(k)", "add": "bound add", "in_hit": "in hit", "in_miss": "in miss",
            "batch_add": "batch add", "batch_query": "batch q"}
KINDS = ("int", "str", "numpy")
KIND_LABEL = {"int": "list of int", "str": "list of str (20 chars)",
              "numpy": "numpy int64 array"}
ERROR_RATE = 0.01
CLOCK: Callable[[], float] = time.perf_counter  # --clock cpu: time.thread_time


# ---- per-item loops: the same bytecode for every library --------------------------


def loop_add_call(f: Any, keys: Sequence[Any]) -> None:
    for k in keys:
        f.add(k)


def loop_add(f: Any, keys: Sequence[Any]) -> None:
    add = f.add
    for k in keys:
        add(k)


def loop_in(f: Any, keys: Sequence[Any]) -> None:
    for k in keys:
        k in f  # noqa: B015


# ---- the libraries ----------------------------------------------------------------


@dataclass
class Lib:
    name: str
    module: str                       # what must import for it to run
    make: Callable[[int, float], Any]
    nbytes: Callable[[Any], float]   # of the filled filter (static kinds: the built one)
    batch_add: dict[str, Callable[[Any, Any], Any]] = field(default_factory=dict)
    batch_query: dict[str, Callable[[Any, Any], Any]] = field(default_factory=dict)
    per_item: tuple[str, ...] = ("int", "str")
    max_n: int | None = None          # too slow beyond this
    ours: bool = False
    note: str = ""
    static: bool = False              # built once from all keys: batch_add is the build


class _Static:
    """A static filter before its build: ``batch_add`` builds ``self.built``."""

    def __init__(self, build: Callable[[Any], Any]) -> None:
        self.build_fn, self.built = build, None

    def build(self, keys: Any) -> None:
        self.built = self.build_fn(keys)


def _libs(slow_max_n: int) -> list[Lib]:
    def bk(cls_name: str) -> Lib:
        def make(n: int, p: float) -> Any:
            import bloomkit
            return getattr(bloomkit, cls_name)(n, p)
        both = {k: (lambda f, keys: f.add_many(keys)) for k in KINDS}
        query = {k: (lambda f, keys: f.contains_many(keys)) for k in KINDS}
        return Lib(f"bloomkit.{cls_name}", "bloomkit", make, lambda f: f.nbytes,
                   both, query, ours=True)

    def abloom(serializable: bool) -> Lib:
        def make(n: int, p: float) -> Any:
            import abloom
            return abloom.BloomFilter(n, p, serializable=serializable)
        upd: dict[str, Callable[[Any, Any], Any]] = {
            "int": lambda f, k: f.update(k), "str": lambda f, k: f.update(k)}
        if not serializable:  # serializable mode refuses numpy scalars
            upd["numpy"] = lambda f, k: f.update(k)
        return Lib("abloom" + (" serializable" if serializable else ""), "abloom", make,
                   lambda f: f.byte_count, upd, {},
                   note="no batch query API" + ("" if not serializable else
                                                "; numpy scalars refused in this mode"))

    def rbloom_make(n: int, p: float) -> Any:
        import rbloom
        return rbloom.Bloom(n, p)

    def pbf_make(n: int, p: float) -> Any:
        import pybloomfilter
        return pybloomfilter.BloomFilter(n, p)

    def fb_make(n: int, p: float) -> Any:
        import fastbloom_rs
        return fastbloom_rs.BloomFilter(n, p)

    def pp_make(n: int, p: float) -> Any:
        import probables
        return probables.BloomFilter(est_elements=n, false_positive_rate=p)

    def static(name: str, module: str, build: Callable[[Any, float], Any],
               query: bool, nbytes: Callable[[Any], float], note: str = "") -> Lib:
        def make(n: int, p: float) -> Any:
            return _Static(lambda keys: build(keys, p))
        batch = {k: (lambda f, keys: f.build(keys)) for k in KINDS}
        q = {k: (lambda f, keys: f.built.contains_many(keys)) for k in KINDS} if query else {}
        return Lib(name, module, make, nbytes, batch, q, per_item=(),
                   ours=name.startswith("bloomkit"), static=True, note=note)

    def bk_fuse(keys: Any, p: float) -> Any:
        import bloomkit
        return bloomkit.BinaryFuseFilter(keys, error_rate=p)

    def pff_fuse8(keys: Any, p: float) -> Any:
        import pyfusefilter
        return pyfusefilter.Fuse8(keys)

    upd = {k: (lambda f, keys: f.update(keys)) for k in KINDS}
    return [
        static("bloomkit.BinaryFuseFilter", "bloomkit", bk_fuse, True, lambda f: f.nbytes,
               note="static: batch add = the build; error_rate 0.01 gives 8-bit "
                    "fingerprints (rate 2^-8 = 0.39%)"),
        static("pyfusefilter.Fuse8", "pyfusefilter", pff_fuse8, False,
               lambda f: f.size_in_bytes(),
               note="static, 8-bit (2^-8); keys go through Python's hash() (str hashes "
                    "change per process); no batch query API; needs xxhash<4"),
        bk("BlockedBloomFilter"),
        bk("BloomFilter"),
        abloom(False),
        abloom(True),
        Lib("rbloom", "rbloom", rbloom_make, lambda f: f.size_in_bits / 8, upd, {},
            note="no batch query API; numpy through iteration"),
        Lib("pybloomfiltermmap3", "pybloomfilter", pbf_make, lambda f: f.num_bits / 8,
            upd, {}, note="no batch query API; numpy through iteration"),
        Lib("fastbloom-rs", "fastbloom_rs", fb_make, lambda f: f.config().size() / 8,
            {"int": lambda f, k: f.add_int_batch(k), "str": lambda f, k: f.add_str_batch(k),
             "numpy": lambda f, k: f.add_int_batch(k)},
            {"int": lambda f, k: f.contains_int_batch(k, check_type=False),
             "str": lambda f, k: f.contains_str_batch(k, check_type=False),
             "numpy": lambda f, k: f.contains_int_batch(k, check_type=False)},
            note="typed batch APIs, check_type=False"),
        Lib("pyprobables", "probables", pp_make, lambda f: f.number_bits / 8, {}, {},
            per_item=("str",), max_n=slow_max_n,
            note=f"pure Python: only n <= {slow_max_n:.0e}; str/bytes keys only (FPR measured "
                 "on str keys); no batch API"),
    ]


def _available(lib: Lib) -> str | None:
    try:
        importlib.import_module(lib.module)
    except ImportError as e:
        return f"not installed ({e})"
    return None


# ---- keys ---------------------------------------------------------------------------


def make_keys(n: int, sample: int, seed: int) -> dict[str, dict[str, Any]]:
    """Members and never-added probes, as int lists, str lists and a numpy array."""
    gen = np.random.default_rng(seed)
    members = gen.permutation(np.unique(gen.integers(0, 2**62, int(n * 1.001) + 16,
                                                      dtype=np.int64)))[:n]
    assert len(members) == n
    misses = gen.integers(2**62, 2**63 - 1, min(n, sample), dtype=np.int64)
    hits = members[: min(n, sample)]
    m_list, h_list, x_list = members.tolist(), hits.tolist(), misses.tolist()
    return {
        "int": {"members": m_list, "hits": h_list, "misses": x_list},
        "str": {"members": [f"key:{v:016x}" for v in m_list],
                "hits": [f"key:{v:016x}" for v in h_list],
                "misses": [f"key:{v:016x}" for v in x_list]},
        "numpy": {"members": members, "hits": hits, "misses": misses},
    }


# ---- timing -------------------------------------------------------------------------


def timed(fn: Callable[..., Any], *args: Any) -> float:
    gc.collect()
    gc.disable()
    try:
        t0 = CLOCK()
        fn(*args)
        return CLOCK() - t0
    finally:
        gc.enable()


def run(ns: list[int], reps: int, sample: int, slow_max_n: int, only: set[str] | None,
        quiet: bool, partial: Callable[[dict[str, Any]], None] | None = None
        ) -> dict[str, Any]:
    libs = [lib for lib in _libs(slow_max_n) if only is None or lib.name in only]
    skipped: dict[str, str] = {}
    active: list[Lib] = []
    for lib in libs:
        why = _available(lib)
        if why:
            skipped[lib.name] = why
        else:
            active.append(lib)
    out: dict[str, Any] = {"sizes": {}, "skipped": skipped,
                           "notes": {lib.name: lib.note for lib in libs if lib.note}}
    for n in ns:
        t_keys = time.perf_counter()
        keys = make_keys(n, sample, seed=n)
        if not quiet:
            print(f"# n={n:.0e}: keys ready in {time.perf_counter() - t_keys:.1f}s", flush=True)
        raw: dict[str, dict[str, dict[str, list[float]]]] = {}
        extra: dict[str, dict[str, Any]] = {}
        size_skips: dict[str, str] = {}
        floor_set = {"int": frozenset(range(8)), "str": frozenset(f"k{i}" for i in range(8))}
        for rep in range(reps):
            for kind in ("int", "str"):
                hits = keys[kind]["hits"]
                raw.setdefault("interpreter floor", {}).setdefault(kind, {}).setdefault(
                    "in_hit", []).append(timed(loop_in, floor_set[kind], hits)
                                         / len(hits))
            for lib in active:
                if lib.max_n is not None and n > lib.max_n:
                    size_skips[lib.name] = f"skipped above n={lib.max_n:.0e} ({lib.note})"
                    continue
                per = raw.setdefault(lib.name, {})
                for kind in KINDS:
                    k = keys[kind]
                    res = per.setdefault(kind, {})
                    filled = None
                    big = n > sample and kind in lib.batch_add
                    if kind in lib.per_item:
                        # Large n: per-item add is timed on the first `sample` keys into a
                        # full-size filter (same memory, same random access pattern); the
                        # queries then run on the batch-built filter at capacity.
                        first = k["members"][:sample] if big else k["members"]
                        f = lib.make(n, ERROR_RATE)
                        res.setdefault("add_call", []).append(
                            timed(loop_add_call, f, first) / len(first))
                        del f
                        f = lib.make(n, ERROR_RATE)
                        res.setdefault("add", []).append(
                            timed(loop_add, f, first) / len(first))
                        if not big:
                            filled = f
                            res.setdefault("in_hit", []).append(
                                timed(loop_in, f, k["hits"]) / len(k["hits"]))
                            res.setdefault("in_miss", []).append(
                                timed(loop_in, f, k["misses"]) / len(k["misses"]))
                        del f
                    if kind in lib.batch_add:
                        f = lib.make(n, ERROR_RATE)
                        try:
                            dt = timed(lib.batch_add[kind], f, k["members"]) / n
                        except Exception as e:  # a peer refusing an input type
                            extra.setdefault(lib.name, {})[f"{kind}_error"] = repr(e)
                        else:
                            res.setdefault("batch_add", []).append(dt)
                            if lib.static and kind in ("int", "str"):
                                built = f.built  # `in` on the built filter itself
                                res.setdefault("in_hit", []).append(
                                    timed(loop_in, built, k["hits"]) / len(k["hits"]))
                                res.setdefault("in_miss", []).append(
                                    timed(loop_in, built, k["misses"]) / len(k["misses"]))
                            if filled is None:
                                filled = f.built if lib.static else f
                            if kind in lib.batch_query:
                                res.setdefault("batch_query", []).append(
                                    timed(lib.batch_query[kind], f, k["members"]) / n)
                            if big and kind in lib.per_item:
                                res.setdefault("in_hit", []).append(
                                    timed(loop_in, f, k["hits"]) / len(k["hits"]))
                                res.setdefault("in_miss", []).append(
                                    timed(loop_in, f, k["misses"]) / len(k["misses"]))
                    if rep == 0 and filled is not None and "fpr" not in extra.get(lib.name, {}):
                        misses = k["misses"]
                        fp = sum(1 for x in misses if x in filled)
                        extra.setdefault(lib.name, {}).update(
                            fpr=fp / len(misses), bytes_per_key=lib.nbytes(filled) / n,
                            fpr_probes=len(misses))
                    del filled
                    gc.collect()
            if not quiet:
                print(f"#   repetition {rep + 1}/{reps} done", flush=True)
        out["sizes"][str(n)] = _summarise(raw, extra, size_skips,
                                          {lib.name for lib in active if lib.static})
        if partial is not None:
            partial(out)
    return out


def _summarise(raw: dict[str, Any], extra: dict[str, Any], size_skips: dict[str, str],
               static: set[str] | frozenset[str] = frozenset()) -> dict[str, Any]:
    med: dict[str, dict[str, dict[str, float]]] = {}
    for lib, per in raw.items():
        for kind, ops in per.items():
            for op, vals in ops.items():
                if vals:
                    med.setdefault(lib, {}).setdefault(kind, {})[op] = (
                        statistics.median(vals) * 1e9)
    ours = {lib for lib in med if lib.startswith("bloomkit")} | {"interpreter floor"}
    fastest: dict[str, dict[str, float]] = {}
    for kind in KINDS:
        for op in OPS:
            peers = [med[lib][kind][op] for lib in med if lib not in ours
                     and lib not in static and op in med[lib].get(kind, {})]
            if peers:
                fastest.setdefault(kind, {})[op] = min(peers)
    return {"ns_per_key": med, "fastest_peer": fastest, "space_fpr": extra,
            "skipped": size_skips,
            "raw_ns": {lib: {kind: {op: [v * 1e9 for v in vals] for op, vals in ops.items()}
                             for kind, ops in per.items()} for lib, per in raw.items()}}


# ---- reporting ----------------------------------------------------------------------


def _cell(v: float | None, ref: float | None) -> str:
    if v is None:
        return "-"
    s = f"{v:,.1f}" if v < 1000 else f"{v:,.0f}"
    return f"{s} ({v / ref:.2f}x)" if ref else s


def table(res: dict[str, Any], markdown: bool = False) -> str:
    lines: list[str] = []
    for n, size in res["sizes"].items():
        med, fastest, extra = size["ns_per_key"], size["fastest_peer"], size["space_fpr"]
        floor = med.get("interpreter floor", {})
        for kind in KINDS:
            rows = [lib for lib in med if kind in med[lib]]
            if not rows:
                continue
            ops = [op for op in OPS if any(op in med[lib][kind] for lib in rows)]
            head = ["library"] + [OP_LABEL[o] for o in ops]
            if kind == "int":
                head += ["bytes/key", "FPR at n"]
            title = (f"n = {int(n):,}, keys: {KIND_LABEL[kind]}, "
                     "ns/key (x = ratio to the fastest peer)")
            body = []
            for lib in rows:
                r = [lib] + [_cell(med[lib][kind].get(o), fastest.get(kind, {}).get(o))
                             for o in ops]
                if kind == "int":
                    e = extra.get(lib, {})
                    r += [f"{e['bytes_per_key']:.3f}" if "bytes_per_key" in e else "-",
                          f"{e['fpr'] * 100:.3f}%" if "fpr" in e else "-"]
                body.append(r)
            if kind in floor:
                fl = floor[kind]["in_hit"]
                lines_note = (f"interpreter floor `k in small_frozenset`: {fl:.1f} ns/key; "
                              + "; ".join(f"{lib} in hit = {med[lib][kind]['in_hit'] / fl:.2f}x "
                                          "floor" for lib in rows
                                          if lib.startswith("bloomkit")
                                          and "in_hit" in med[lib][kind]))
            else:
                lines_note = ""
            lines += _render(title, head, body, markdown) + ([lines_note] if lines_note else [])
            lines.append("")
        info = res.get("machine")
        if info and info.get("cache_bytes"):  # JSON from before machine.py has no sizes
            where = [f"{lib} {machine.human(e['bytes_per_key'] * int(n))}: "
                     f"{machine.fits(e['bytes_per_key'] * int(n), info)}"
                     for lib, e in extra.items()
                     if lib.startswith("bloomkit") and "bytes_per_key" in e]
            if where:
                lines.append(f"filters at n = {int(n):,} on this machine: " + "; ".join(where))
        for lib, why in size.get("skipped", {}).items():
            lines.append(f"  {lib}: {why}")
        for lib, e in extra.items():
            for key, val in e.items():
                if key.endswith("_error"):
                    lines.append(f"  {lib}: {key[:-6]} batch refused: {val}")
    for lib, why in res["skipped"].items():
        lines.append(f"skipped {lib}: {why}")
    if any(why.startswith("not installed") for why in res["skipped"].values()):
        lines.append(machine.PEERS_HINT)
    for lib, note in res["notes"].items():
        lines.append(f"note {lib}: {note}")
    return "\n".join(lines)


# ---- the targets of issue #4, checked against one run's medians -----------------------

BK_BLOCKED, BK_CLASSIC = "bloomkit.BlockedBloomFilter", "bloomkit.BloomFilter"
BK_FUSE = "bloomkit.BinaryFuseFilter"
ABLOOM, ABLOOM_SER, FLOOR = "abloom", "abloom serializable", "interpreter floor"


def targets(res: dict[str, Any]) -> list[str]:
    """One line per target of issue #4 that this run measured: the figure and met/MISSED.

    Every figure is a ratio of two ns/key medians of this run (the label says which over
    which), so a line holds whatever the machine's absolute speed."""
    out: list[str] = []

    def get(size: dict[str, Any], lib: str, kind: str, op: str) -> float | None:
        v = size["ns_per_key"].get(lib, {}).get(kind, {}).get(op)
        return float(v) if v is not None else None

    def check(label: str, value: float | None, ok: Callable[[float], bool], unit: str) -> None:
        if value is not None:
            out.append(f"  {label:<72} {value:5.2f}{unit}  {'met' if ok(value) else 'MISSED'}")

    def ratio(a: float | None, b: float | None) -> float | None:
        return a / b if a is not None and b is not None else None

    for n_str, size in res["sizes"].items():
        n = int(n_str)
        if n == 10**6:
            for kind in ("int", "str"):
                for op, name in (("add", "add"), ("in_hit", "`in`")):
                    check(f"1e6 {kind}: blocked per-item {name} / abloom serializable <= 1",
                          ratio(get(size, BK_BLOCKED, kind, op),
                                get(size, ABLOOM_SER, kind, op)), lambda r: r <= 1.0, "x")
                check(f"1e6 {kind}: blocked `in` / interpreter floor <= 1.15",
                      ratio(get(size, BK_BLOCKED, kind, "in_hit"),
                            get(size, FLOOR, kind, "in_hit")), lambda r: r <= 1.15, "x")
                for op, name in (("add", "add"), ("in_hit", "`in`")):
                    check(f"1e6 {kind}: classic per-item {name} / abloom <= 1.5",
                          ratio(get(size, BK_CLASSIC, kind, op), get(size, ABLOOM, kind, op)),
                          lambda r: r <= 1.5, "x")
                for peer in (ABLOOM, ABLOOM_SER):
                    upd = get(size, peer, kind, "batch_add")
                    for op, name in (("batch_add", "add"), ("batch_query", "query")):
                        check(f"1e6 {kind} list: {peer}.update / blocked batch {name} >= 1.5",
                              ratio(upd, get(size, BK_BLOCKED, kind, op)),
                              lambda r: r >= 1.5, "x")
                        check(f"1e6 {kind} list: {peer}.update / classic batch {name} >= 1",
                              ratio(upd, get(size, BK_CLASSIC, kind, op)),
                              lambda r: r >= 1.0, "x")
            for lib, bits, limit in ((BK_CLASSIC, 9.585, 1.01), (BK_BLOCKED, 10.6, 1.0)):
                bpk = size["space_fpr"].get(lib, {}).get("bytes_per_key")
                check(f"1e6 space at 1%: {lib} bits/key <= {bits * limit:.2f}",
                      bpk * 8 if bpk is not None else None, lambda v, c=bits * limit: v <= c,
                      " bits")
        if n in (10**6, 10**7):
            want = 4.0 if n == 10**6 else 3.0
            upd = get(size, ABLOOM, "int", "batch_add")
            for op, name in (("batch_add", "add"), ("batch_query", "query")):
                check(f"1e{len(n_str) - 1} numpy: abloom.update(list) / blocked numpy {name} "
                      f">= {want:g}",
                      ratio(upd, get(size, BK_BLOCKED, "numpy", op)),
                      lambda r, w=want: r >= w, "x")
    fuse: list[str] = []
    for n_str, size in res["sizes"].items():
        n = int(n_str)
        if n not in (10**6, 10**7):
            continue
        before = len(out)
        check(f"1e{len(n_str) - 1} numpy: fuse build / blocked add_many <= 8",
              ratio(get(size, BK_FUSE, "numpy", "batch_add"),
                    get(size, BK_BLOCKED, "numpy", "batch_add")), lambda r: r <= 8.0, "x")
        check(f"1e{len(n_str) - 1} numpy: fuse contains_many / blocked <= 1.5",
              ratio(get(size, BK_FUSE, "numpy", "batch_query"),
                    get(size, BK_BLOCKED, "numpy", "batch_query")), lambda r: r <= 1.5, "x")
        for kind in ("int", "str"):
            check(f"1e{len(n_str) - 1} {kind}: fuse `in` / blocked `in` <= 1.2",
                  ratio(get(size, BK_FUSE, kind, "in_hit"), get(size, BK_BLOCKED, kind, "in_hit")),
                  lambda r: r <= 1.2, "x")
        bpk = size["space_fpr"].get(BK_FUSE, {}).get("bytes_per_key")
        check(f"1e{len(n_str) - 1} space: fuse (8-bit) bits/key <= 9.1",
              bpk * 8 if bpk is not None else None, lambda v: v <= 9.1, " bits")
        fuse += out[before:]
        del out[before:]
    before = len(out)
    for n_str, size in res["sizes"].items():
        for kind in ("int", "str"):
            for lib in (BK_BLOCKED, BK_CLASSIC):
                check(f"n={int(n_str):,} {kind}: {lib[9:]} f.add(k) / abloom f.add(k) <= 1",
                      ratio(get(size, lib, kind, "add_call"),
                            get(size, ABLOOM, kind, "add_call")), lambda r: r <= 1.0, "x")
    percall = out[before:]
    del out[before:]
    info = res.get("machine")
    if out and info and info.get("cache_bytes"):
        for n_str, size in res["sizes"].items():
            bpk = size["space_fpr"].get(BK_BLOCKED, {}).get("bytes_per_key")
            if bpk is not None and int(n_str) == 10**6:
                out.append(f"  (per-item lines at 1e6 depend on the caches: the blocked filter "
                           f"is {machine.human(bpk * 1e6)}: {machine.fits(bpk * 1e6, info)})")
    head = (["Targets of issue #4 in this run:", *out]) if out else []
    return (head + (["Targets of issue #17 in this run:", *fuse] if fuse else [])
            + (["Targets of issue #21 in this run (the per-call form; public class vs C base: "
                "benchmarks/percall.py):", *percall] if percall else []))


def _render(title: str, head: list[str], body: list[list[str]], markdown: bool) -> list[str]:
    if markdown:
        out = [f"**{title}**", "", "| " + " | ".join(head) + " |",
               "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
        out += ["| " + " | ".join(r) + " |" for r in body]
        return [*out, ""]
    widths = [max(len(str(r[i])) for r in [head, *body]) for i in range(len(head))]
    fmt = lambda r: "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)  # noqa: E731
                              for i, (c, w) in enumerate(zip(r, widths, strict=True)))
    return [title, fmt(head), "  ".join("-" * w for w in widths), *(fmt(r) for r in body)]


def chart(res: dict[str, Any], path: Path) -> str | None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib not installed: no chart"
    sizes = list(res["sizes"])
    fig, axes = plt.subplots(len(sizes), len(KINDS), figsize=(6 * len(KINDS), 4 * len(sizes)),
                             squeeze=False)
    for row, n in enumerate(sizes):
        med = res["sizes"][n]["ns_per_key"]
        for col, kind in enumerate(KINDS):
            ax = axes[row][col]
            libs = [lib for lib in med if kind in med[lib] and lib != "interpreter floor"]
            ops = [op for op in OPS if any(op in med[lib][kind] for lib in libs)]
            width = 0.8 / max(1, len(libs))
            for i, lib in enumerate(libs):
                xs = [j + i * width for j in range(len(ops))]
                ys = [med[lib][kind].get(op, float("nan")) for op in ops]
                ax.bar(xs, ys, width, label=lib)
            if kind in med.get("interpreter floor", {}):
                ax.axhline(med["interpreter floor"][kind]["in_hit"], color="k", ls="--", lw=1,
                           label="interpreter floor")
            ax.set_xticks([j + 0.4 - width / 2 for j in range(len(ops))])
            ax.set_xticklabels([OP_LABEL[o] for o in ops])
            ax.set_yscale("log")
            ax.set_ylabel("ns per key (log)")
            ax.set_title(f"n = {int(n):,}, {kind} keys")
            if row == 0 and col == 0:
                ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def run_info(info: dict[str, Any]) -> dict[str, Any]:
    """benchmarks/machine.py's description plus what this script adds: the platform string,
    the peers' versions, which bloomkit ran and whether its SIMD paths were on."""
    info = {**info, "platform": platform.platform()}
    versions = {}
    for dist in ("abloom", "rbloom", "pybloomfiltermmap3", "fastbloom-rs", "pyprobables",
                 "numpy"):
        try:
            from importlib.metadata import version
            versions[dist] = version(dist)
        except Exception:
            versions[dist] = None
    import bloomkit
    versions["bloomkit"] = f"{bloomkit.__file__}"
    try:
        from bloomkit import _core
        info["bloomkit_simd"] = _core.BloomBase._simd()
    except Exception:
        pass
    info["versions"] = versions
    return info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=lambda s: int(float(s)), nargs="+",
                    default=[10**5, 10**6, 10**7])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--sample", type=lambda s: int(float(s)), default=10**6,
                    help="keys per `in` loop and FPR probe set (at most n)")
    ap.add_argument("--slow-max-n", type=lambda s: int(float(s)), default=10**5)
    ap.add_argument("--only", nargs="*", help="library names to run")
    ap.add_argument("--out", type=Path, default=None,
                    help="results folder (default: $BLOOMKIT_BENCH_OUT, else "
                         "<temp dir>/bloomkit-bench; never the source tree unless named)")
    ap.add_argument("--smoke", action="store_true", help="tiny n, 1 repetition (CI)")
    ap.add_argument("--markdown", action="store_true", help="also print markdown tables")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall: perf_counter; cpu: the thread's CPU time (a loaded machine)")
    args = ap.parse_args(argv)
    global CLOCK
    CLOCK = time.thread_time if args.clock == "cpu" else time.perf_counter
    info = machine.announce()
    if args.smoke:
        args.n, args.reps, args.sample = [2000], 1, 2000
    t0 = time.perf_counter()
    name = "compare-smoke" if args.smoke else "compare"
    if args.out is None:
        args.out = machine.results_dir()
    args.out.mkdir(parents=True, exist_ok=True)

    def partial(r: dict[str, Any]) -> None:  # keep what is done if a later size is cut short
        (args.out / f"{name}.partial.json").write_text(json.dumps(r, indent=1))
        if not args.smoke:
            print(table({**r, "skipped": {}, "notes": {}, "machine": info}), flush=True)

    res = run(args.n, args.reps, args.sample, args.slow_max_n,
              set(args.only) if args.only else None, quiet=args.smoke, partial=partial)
    (args.out / f"{name}.partial.json").unlink(missing_ok=True)
    res["machine"] = run_info(info)
    res["load_average_end"] = machine.load_average()
    res["clock"] = args.clock
    res["command"] = " ".join([os.path.basename(sys.executable), *sys.argv])
    res["reps"] = args.reps
    res["seconds"] = round(time.perf_counter() - t0, 1)
    print(table(res))
    checks = targets(res)
    if checks:
        print("\n".join(checks))
    if args.markdown:
        print()
        print(table(res, markdown=True))
    (args.out / f"{name}.json").write_text(json.dumps(res, indent=1))
    note = chart(res, args.out / f"{name}.png")
    print(f"wrote {args.out / (name + '.json')}"
          + (f" ({note})" if note else f" and {args.out / (name + '.png')}")
          + f" in {res['seconds']}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
