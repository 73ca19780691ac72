"""Per-call cost of every public class against its own C base type, in ONE process (issue #21).

    python benchmarks/percall.py                     # 2e5 keys a loop, 7 repetitions
    python benchmarks/percall.py --clock cpu --reps 9 # on a loaded machine
    python benchmarks/percall.py --smoke             # tiny, 1 repetition (CI)
    python benchmarks/percall.py --callgrind         # instructions per call (a few minutes)

Every public structure class is a Python subclass of a C type (``class BloomFilter(Persistent,
_core.BloomBase)``).  This script times the same per-key loops on an instance of the public
class and on an instance of the bare C base type holding the same state (``Base.from_bytes``
of the public object's bytes), and prints public / base per class and per call form:

  f.m(k)    ``for k in keys: f.m(k)``: the method looked up on every call, the form users write
  bound m   ``m = f.m; for k in keys: m(k)``: the bound method, no lookup (what hid the cost)
  k in f    ``for k in keys: k in f``: the sq_contains slot

TopK is not timed here (it has no ``from_bytes`` to make a C-base twin);
tests/test_percall.py checks its calls specialise like the others'.  The issue's target:
every ratio within 1.05.  Two references run in the same repetitions:
a plain Python subclass of ``_core.BloomBase`` with ``__slots__ = ()`` that does NOT get its
own method descriptors (the state of every public class before the fix, so the cost the fix
removes is visible in the same run), and abloom's ``f.add(k)`` (the target: bloomkit's
``f.add(k)`` at most abloom's).

Why the fix works (see module.c, "per-class method descriptors"): CPython 3.11+ specialises a
call of a C method only when the instance's type IS the method's class; a subclass instance
took the generic call path on every call.  ``Persistent.__init_subclass__`` now gives each
class its own descriptors of the same C functions.

Each loop runs in its own copy of the code object (its own specialisation state); a first
repetition warms every loop up and is not kept; base and public alternate which goes first;
the garbage collector is off while timing; every figure is the median over the repetitions
(the ratio is the median of the per-repetition ratios, with its range).  Mutating loops (add,
record, remove) get a fresh object for each timing.  Results go to <out>/percall.json.
Timings are never asserted.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if any((REPO / "src" / "bloomkit" / f"_core{suffix}").exists() for suffix in EXTENSION_SUFFIXES):
    sys.path.insert(0, str(REPO / "src"))

sys.path.insert(0, str(HERE))
import machine  # noqa: E402

import bloomkit  # noqa: E402
from bloomkit import _core  # noqa: E402

TARGET = 1.05  # issue #21: public / C base within 5%
CLOCK: Callable[[], float] = time.perf_counter


# ---- the loops: one template, one fresh code object per (class, call, side) ----------


def _loop(form: str, method: str, args: str) -> Callable[[Any, list[Any]], None]:
    """``call``: f.method(args) per key; ``bound``: m = f.method first; ``in``: k in f."""
    if form == "in":
        body = "    for k in keys:\n        k in f\n"
    elif form == "call":
        body = f"    for k in keys:\n        f.{method}({args})\n"
    else:
        body = f"    m = f.{method}\n    for k in keys:\n        m({args})\n"
    ns: dict[str, Any] = {}
    exec(f"def loop(f, keys):\n{body}", ns)  # a new code object: its own specialisation
    fn: Callable[[Any, list[Any]], None] = ns["loop"]
    return fn


def _fresh(fn: Callable[..., None]) -> Callable[..., None]:
    code = fn.__code__.replace()
    return types.FunctionType(code, fn.__globals__)


# ---- the structures -------------------------------------------------------------------


@dataclass
class Op:
    method: str       # "in" for the slot
    args: str         # the call's arguments
    needs: str        # "empty": a fresh empty object per timing; "filled": the keys added
    consumes: bool    # the loop changes the object (a fresh one per timing)


ADD = Op("add", "k", "empty", True)
IN = Op("in", "", "filled", False)
COUNT = Op("count", "k", "filled", False)
REMOVE = Op("remove", "k", "filled", True)


@dataclass
class Spec:
    name: str
    make: Callable[[list[Any]], Any]   # the empty public object (static kinds: built)
    fill: Callable[[Any, list[Any]], None] | None
    ops: tuple[Op, ...]


def _specs() -> list[Spec]:
    def add_many(f: Any, keys: list[Any]) -> None:
        f.add_many(keys)

    def record_many(f: Any, keys: list[Any]) -> None:
        f.record_many(keys)

    n_of = len
    return [
        Spec("BloomFilter", lambda k: bloomkit.BloomFilter(n_of(k)), add_many, (ADD, IN)),
        Spec("BlockedBloomFilter", lambda k: bloomkit.BlockedBloomFilter(n_of(k)), add_many,
             (ADD, IN)),
        Spec("CountingBloomFilter", lambda k: bloomkit.CountingBloomFilter(n_of(k)), add_many,
             (ADD, IN, COUNT, REMOVE)),
        Spec("ScalableBloomFilter", lambda k: bloomkit.ScalableBloomFilter(n_of(k)), add_many,
             (ADD, IN)),
        Spec("CuckooFilter", lambda k: bloomkit.CuckooFilter(n_of(k)), add_many,
             (ADD, IN, COUNT, REMOVE)),
        Spec("QuotientFilter", lambda k: bloomkit.QuotientFilter(n_of(k)), add_many,
             (ADD, IN, COUNT, REMOVE)),
        Spec("CountMinSketch", lambda k: bloomkit.CountMinSketch(max(64, n_of(k) // 4), 4),
             add_many, (ADD, IN, Op("estimate", "k", "filled", False))),
        Spec("TinyLFU", lambda k: bloomkit.TinyLFU(n_of(k)), record_many,
             (Op("record", "k", "empty", True), Op("estimate", "k", "filled", False),
              Op("admit", "k, k", "filled", False))),
        Spec("BinaryFuseFilter", lambda k: bloomkit.BinaryFuseFilter(k), None, (IN,)),
        Spec("SlidingBloomFilter", lambda k: bloomkit.SlidingBloomFilter(n_of(k)), add_many,
             (ADD, IN)),
        Spec("GrowableFilter", lambda k: bloomkit.GrowableFilter(n_of(k)), add_many, (ADD, IN)),
    ]


def c_base(cls: type) -> type:
    """The C type a public class extends (the first static type of its MRO)."""
    return next(t for t in cls.__mro__ if not t.__flags__ & (1 << 9))  # Py_TPFLAGS_HEAPTYPE


class PlainSubclass(_core.BloomBase):  # type: ignore[type-arg]
    """A Python subclass without its own method descriptors: every public class before."""

    __slots__ = ()


# ---- timing -------------------------------------------------------------------------


def load(cls: type, state: bytes | None) -> Any:
    """An object of ``cls`` (a C base or a Python subclass of one) holding ``state``."""
    return cls.from_bytes(state)  # type: ignore[attr-defined]


def timed(loop: Callable[[Any, list[Any]], None], obj: Any, keys: list[Any]) -> float:
    gc.collect()
    gc.disable()
    try:
        t0 = CLOCK()
        loop(obj, keys)
        return (CLOCK() - t0) / len(keys) * 1e9
    finally:
        gc.enable()


def run(n: int, reps: int, seed: int, only: set[str] | None) -> dict[str, Any]:
    import random

    rnd = random.Random(seed)
    keys = rnd.sample(range(2**62), n)
    specs = [s for s in _specs() if only is None or s.name in only]
    raw: dict[str, dict[str, dict[str, list[float]]]] = {}
    loops: dict[tuple[str, str, str, str], Callable[[Any, list[Any]], None]] = {}

    def loop_for(row: str, op: Op, form: str, side: str) -> Callable[[Any, list[Any]], None]:
        key = (row, op.method, form, side)
        if key not in loops:
            loops[key] = _fresh(_loop(form, op.method, op.args))
        return loops[key]

    abloom: Any
    try:
        import abloom
    except ImportError:
        abloom = None

    for rep in range(-1, reps):  # repetition -1 warms every loop up and is not kept
        record = rep >= 0
        for spec in specs:
            public = spec.make(keys)
            base_t = c_base(type(public))
            empty = public.to_bytes() if spec.fill is not None else None
            if spec.fill is not None:
                spec.fill(public, keys)
            filled = public.to_bytes()
            states = {"filled": filled, "empty": empty}
            sides: dict[str, type] = {"base": base_t, "public": type(public)}
            if spec.name == "BlockedBloomFilter":
                sides["plain subclass"] = PlainSubclass
            for op in spec.ops:
                forms = ("in",) if op.method == "in" else ("call", "bound")
                for form in forms:
                    label = "k in f" if form == "in" else (
                        f"f.{op.method}({op.args})" if form == "call" else f"bound {op.method}")
                    order = list(sides) if rep % 2 == 0 else list(reversed(sides))
                    state = states[op.needs]
                    shared = ({s: load(sides[s], state) for s in order}
                              if not op.consumes else {})
                    for side in order:
                        obj = shared[side] if shared else load(sides[side], state)
                        t = timed(loop_for(spec.name, op, form, side), obj, keys)
                        if record:
                            raw.setdefault(spec.name, {}).setdefault(label, {}).setdefault(
                                side, []).append(t)
                        del obj
                    del shared
        if abloom is not None:
            for form in ("call", "bound"):
                obj = abloom.BloomFilter(n, 0.01)
                t = timed(loop_for("abloom", ADD, form, "peer"), obj, keys)
                if record:
                    raw.setdefault("abloom", {}).setdefault(
                        "f.add(k)" if form == "call" else "bound add", {}).setdefault(
                        "peer", []).append(t)
    return raw


# ---- reporting ----------------------------------------------------------------------


def summarise(raw: dict[str, Any]) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for cls, calls in raw.items():
        for call, sides in calls.items():
            med = {side: statistics.median(v) for side, v in sides.items()}
            row: dict[str, Any] = {"class": cls, "call": call, "ns": med}
            if "base" in sides:
                for side in sides:
                    if side == "base":
                        continue
                    ratios = [p / b for p, b in zip(sides[side], sides["base"], strict=True)]
                    row.setdefault("ratio", {})[side] = {
                        "median": statistics.median(ratios), "min": min(ratios),
                        "max": max(ratios)}
            rows.append(row)
    peer = raw.get("abloom", {})
    vs_abloom = {}
    for cls in ("BlockedBloomFilter", "BloomFilter"):
        for call in ("f.add(k)", "bound add"):
            ours = raw.get(cls, {}).get(call, {}).get("public")
            theirs = peer.get(call, {}).get("peer")
            if ours and theirs:
                ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
                vs_abloom[f"{cls} {call}"] = statistics.median(ratios)
    return {"rows": rows, "vs_abloom": vs_abloom}


def table(summary: dict[str, Any]) -> str:
    head = ["class", "call", "C base ns", "public ns", "public/base", "range", "<= 1.05"]
    body: list[list[str]] = []
    plain: list[str] = []
    for row in summary["rows"]:
        if "ratio" not in row:
            continue
        r = row["ratio"]["public"]
        body.append([row["class"], row["call"], f"{row['ns']['base']:.1f}",
                     f"{row['ns']['public']:.1f}", f"{r['median']:.3f}",
                     f"{r['min']:.2f}-{r['max']:.2f}",
                     "met" if r["median"] <= TARGET else "MISSED"])
        if "plain subclass" in row["ratio"]:
            p = row["ratio"]["plain subclass"]
            plain.append(f"  {row['call']:<10} plain subclass / base {p['median']:.3f} "
                         f"({p['min']:.2f}-{p['max']:.2f}), "
                         f"{row['ns']['plain subclass']:.1f} ns")
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                       for i, (c, w) in enumerate(zip(r, widths, strict=True)))
             for r in [head, [""] * len(head), *body]]
    lines[1] = "  ".join("-" * w for w in widths)
    if plain:
        lines += ["", "Reference: a Python subclass of _core.BloomBase with __slots__ = () and no "
                  "own method descriptors (every public class before the fix), same state:",
                  *plain]
    if summary["vs_abloom"]:
        lines += ["", "Against abloom.BloomFilter in the same repetitions (target: f.add(k) "
                  "<= 1):"]
        lines += [f"  {k:<32} / abloom {v:.3f}"
                  + ("" if "bound" in k else f"  {'met' if v <= 1.0 else 'MISSED'}")
                  for k, v in summary["vs_abloom"].items()]
    else:
        lines += ["", "abloom not installed: no peer reference; " + machine.PEERS_HINT]
    return "\n".join(lines)


# ---- instruction counts (--callgrind): stable on a loaded machine ---------------------

# One call per class and calling convention (METH_O, METH_FASTCALL, the sq_contains slot) that
# can repeat on the same keys (no add into a cuckoo or quotient filter that would fill up).
PROBES: tuple[tuple[str, str, str], ...] = (
    ("BloomFilter", "add", "k"), ("BlockedBloomFilter", "add", "k"),
    ("BlockedBloomFilter", "in", ""), ("CountingBloomFilter", "count", "k"),
    ("ScalableBloomFilter", "add", "k"), ("CuckooFilter", "count", "k"),
    ("QuotientFilter", "count", "k"), ("CountMinSketch", "add", "k, 1"),
    ("TinyLFU", "admit", "k, k"), ("BinaryFuseFilter", "in", ""),
)
PROBE_KEYS = 20_000  # distinct keys in the filter; a probe loops over them n / PROBE_KEYS times


def probe(cls_name: str, method: str, args: str, side: str, n: int) -> None:
    """The child of --callgrind: one loop of n calls on a C base, public or plain object."""
    spec = next(s for s in _specs() if s.name == cls_name)
    distinct = list(range(1, PROBE_KEYS + 1))
    f = spec.make(distinct if spec.fill is None else [0] * (2 * PROBE_KEYS))
    if spec.fill is not None:
        spec.fill(f, distinct)
    base = c_base(type(f))
    cls = {"base": base, "public": type(f),
           "plain": type("Plain", (base,), {"__slots__": ()})}[side]
    obj = load(cls, f.to_bytes())
    loop = _loop("in" if method == "in" else "call", method, args)
    loop(obj, distinct * (n // PROBE_KEYS))


def callgrind(valgrind: str, n: int) -> list[dict[str, Any]]:
    """Instructions per call: callgrind's total at 2n calls minus at n, over n."""
    import re
    import subprocess

    def total(cls_name: str, method: str, args: str, side: str, calls: int) -> int:
        out = subprocess.run(
            [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
             __file__, "--probe", cls_name, method, args, side, str(calls)],
            capture_output=True, text=True, check=True).stderr
        m = re.search(r"Collected : (\d+)", out)
        if m is None:
            raise RuntimeError(f"no callgrind total in: {out[-500:]}")
        return int(m.group(1))

    rows = []
    for cls_name, method, args in PROBES:
        row: dict[str, Any] = {"class": cls_name,
                               "call": "k in f" if method == "in" else f"f.{method}({args})"}
        sides = ("base", "public") + (("plain",) if "Bloom" in cls_name else ())
        for side in sides:  # plain subclass: the state before the fix (a reference)
            row[side] = (total(cls_name, method, args, side, 2 * n)
                         - total(cls_name, method, args, side, n)) / n
        rows.append(row)
        plain = (f"  plain subclass {row['plain']:6.0f} ({row['plain'] / row['base']:.3f})"
                 if "plain" in row else "")
        print(f"  {row['class']:<20} {row['call']:<14} C base {row['base']:6.0f}  public "
              f"{row['public']:6.0f} ({row['public'] / row['base']:.3f}){plain}", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    if argv is None and sys.argv[1:2] == ["--probe"]:
        p_cls, p_method, p_args, p_side, p_calls = sys.argv[2:7]
        probe(p_cls, p_method, p_args, p_side, int(p_calls))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=lambda s: int(float(s)), default=200_000,
                    help="keys per loop (every structure is sized for them)")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--only", nargs="*", help="class names to run")
    ap.add_argument("--out", type=Path, default=None,
                    help="results folder (default: $BLOOMKIT_BENCH_OUT, else "
                         "<temp dir>/bloomkit-bench; never the source tree unless named)")
    ap.add_argument("--smoke", action="store_true", help="tiny n, 1 repetition (CI)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall: perf_counter; cpu: the thread's CPU time (a loaded machine)")
    ap.add_argument("--callgrind", action="store_true",
                    help="instructions per call under valgrind instead of times")
    args = ap.parse_args(argv)
    global CLOCK
    CLOCK = time.thread_time if args.clock == "cpu" else time.perf_counter
    info = machine.announce()
    if args.out is None:
        args.out = machine.results_dir()
    if args.callgrind:
        import shutil

        valgrind = shutil.which("valgrind")
        if valgrind is None:
            print("valgrind not found")
            return 1
        n = 2 * PROBE_KEYS if args.smoke else 4 * PROBE_KEYS
        print(f"# callgrind: instructions per call, ({2 * n:,} calls - {n:,} calls) / {n:,}; "
              "public and plain subclass over C base in brackets", flush=True)
        rows = callgrind(valgrind, n)
        args.out.mkdir(parents=True, exist_ok=True)
        path = args.out / ("percall-callgrind" + ("-smoke" if args.smoke else "") + ".json")
        path.write_text(json.dumps({"machine": info, "calls": n, "rows": rows}, indent=1))
        print(f"wrote {path}")
        return 0
    if args.smoke:
        args.n, args.reps = 2000, 1
    t0 = time.perf_counter()
    print(f"# {args.n:,} keys a loop, {args.reps} repetitions, clock {args.clock}", flush=True)
    raw = run(args.n, args.reps, args.seed, set(args.only) if args.only else None)
    summary = summarise(raw)
    print(table(summary))
    name = "percall-smoke" if args.smoke else "percall"
    args.out.mkdir(parents=True, exist_ok=True)
    res = {"machine": info, "load_average_end": machine.load_average(), "clock": args.clock,
           "n": args.n, "reps": args.reps,
           "command": " ".join([os.path.basename(sys.executable), *sys.argv]),
           "seconds": round(time.perf_counter() - t0, 1), **summary, "raw_ns": raw}
    (args.out / f"{name}.json").write_text(json.dumps(res, indent=1))
    print(f"wrote {args.out / (name + '.json')} in {res['seconds']}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
