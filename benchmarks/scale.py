"""Issue #19: builds and queries of 10^7 to 10^9 keys on one machine.

Produces the table of docs/scale.md ("Measured") and stores every figure
with the machine block and the load average in a JSON file:

    PYTHONPATH=src python benchmarks/scale.py --sizes 1e7,1e8 --dir /tmp/bkscale
    PYTHONPATH=src python benchmarks/scale.py --sizes 1e9 --only npy,query,probe

For each size n (int64 keys drawn at random from [0, 2^62), absent keys from
[2^62, 2^63)) it measures, each operation in a fresh child process whose
peak RSS (VmHWM) it reads:

- inmem: ``BlockedBloomFilter(n, 0.01)`` + ``add_many`` of 1 Mi-key slices
  of the mapped .npy file, then one ``save`` (the reference: memory speed
  plus one sequential write);
- npy: ``bloomkit build keys.npy -o FILE`` (the CLI; ratio to inmem);
- create: ``bloomkit.create(FILE, n, 0.01, kind=BlockedBloomFilter)`` +
  ``add_many`` + ``close`` (building in the shared file map; ratio to inmem);
- parquet / strings: ``bloomkit build keys.parquet --column c`` of an int64
  and a 20-character string column, against pyarrow alone reading the same
  column in the same batches (ratio);
- text: ``bloomkit build keys.txt --capacity n`` (decimal lines);
- query: load, mmap open and verify times; batch ``contains_many`` of 10^7
  present keys in memory and on the mapped file (ns a key), ``key in f`` of
  2*10^5 Python ints, the false-positive rate of 10^7 absent keys with its
  standard error;
- thp: the in-memory build and batch query with and without transparent
  huge pages (``BLOOMKIT_NO_THP=1``), back to back, twice;
- probe: benchmarks/line_probe.c (compiled with cc) at the filter's size,
  with and without transparent huge pages: the machine's limit for
  independent random line reads, and the batch query's ratio to it.

The machine is shared: every ratio compares two runs made back to back in
this one invocation, each row records the load average when it was
measured, and ratios are given in wall-clock and in CPU time (user + sys
of the child, which descheduling does not inflate).  Query times are the
querying thread's CPU time, like line_probe.c's.  Nothing here asserts a
speed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import machine

HERE = Path(__file__).resolve().parent
CHUNK = 1 << 20
QUERY_N = 10_000_000

_HWM = """
import atexit, os, sys
def _hwm(path=os.environ["BK_HWM_OUT"]):
    with open("/proc/self/status") as fh:
        kib = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
    with open(path, "w") as out:
        out.write(str(kib * 1024))
atexit.register(_hwm)
"""


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def run_child(code: str, work: Path) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter; return what it printed last (a
    JSON object) plus its wall time, peak RSS and the load average."""
    report = work / "hwm.txt"
    env = dict(os.environ, BK_HWM_OUT=str(report))
    t = time.perf_counter()
    with open(work / "child.out", "w+") as so, open(work / "child.err", "w+") as se:
        p = subprocess.Popen([sys.executable, "-c", _HWM + code], env=env, stdout=so, stderr=se)
        _, status, usage = os.wait4(p.pid, 0)  # CPU times of this child (not its peak:
        p.returncode = os.waitstatus_to_exitcode(status)  # see VmHWM above)
        wall = time.perf_counter() - t
        so.seek(0)
        se.seek(0)
        stdout, stderr = so.read(), se.read()
    if p.returncode != 0:
        raise RuntimeError(f"child failed ({p.returncode}): {stderr.strip()[-2000:]}")
    out = json.loads(stdout.strip().splitlines()[-1]) if stdout.strip() else {}
    out.update(wall_s=round(wall, 3), cpu_s=round(usage.ru_utime + usage.ru_stime, 3),
               peak_rss=int(report.read_text()), load=_load())
    return out


def cli(work: Path, *args: str | Path) -> dict[str, Any]:
    argv = ["bloomkit", *map(str, args)]
    return run_child(f"sys.argv = {argv!r}\nimport runpy\n"
                     "runpy.run_module('bloomkit', run_name='__main__')\n", work)


# ---- Begin logic for the inputs ------------------------------------------------------


def make_keys(work: Path, n: int, seed: int) -> tuple[Path, Path]:
    import numpy as np

    rng = np.random.default_rng(seed)
    present, absent = work / f"keys-{n}.npy", work / f"absent-{n}.npy"
    if not present.exists():
        arr = np.lib.format.open_memmap(present, mode="w+", dtype=np.int64, shape=(n,))
        for i in range(0, n, 10_000_000):
            m = min(10_000_000, n - i)
            arr[i:i + m] = rng.integers(0, 2**62, m, dtype=np.int64)
        arr.flush()
        del arr
        np.save(absent, rng.integers(2**62, 2**63 - 1, QUERY_N, dtype=np.int64))
    return present, absent


def make_parquet(work: Path, n: int, keys: Path) -> Path:
    """An int64 column ``i`` (the .npy keys) and a 20-character string
    column ``s`` (the key in 20 hex-ish letters), row groups of 1 Mi rows."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = work / f"keys-{n}.parquet"
    if path.exists():
        return path
    src = np.load(keys, mmap_mode="r")
    letters = np.frombuffer(b"abcdefghijklmnop", dtype=np.uint8)
    schema = pa.schema([("i", pa.int64()), ("s", pa.string())])
    with pq.ParquetWriter(path, schema) as w:
        for i in range(0, n, CHUNK):
            ints = np.ascontiguousarray(src[i:i + CHUNK])
            m = len(ints)
            # 20 letters: the 16 nibbles of the key, then 4 of them again
            nib = (ints.view(np.uint64)[:, None] >> (np.arange(20, dtype=np.uint64) % 16 * 4))
            data = letters[(nib & 15).astype(np.intp)].tobytes()
            offsets = pa.py_buffer((np.arange(m + 1, dtype=np.int32) * 20).tobytes())
            strings = pa.StringArray.from_buffers(m, offsets, pa.py_buffer(data))
            w.write_table(pa.table({"i": ints, "s": strings}, schema=schema),
                          row_group_size=CHUNK)
    return path


def make_text(work: Path, n: int, keys: Path) -> Path:
    import numpy as np

    path = work / f"keys-{n}.txt"
    if path.exists():
        return path
    src = np.load(keys, mmap_mode="r")
    with open(path, "w") as fh:
        for i in range(0, n, CHUNK):
            fh.write("\n".join(map(str, src[i:i + CHUNK].tolist())))
            fh.write("\n")
    return path


# ---- Begin logic for the measurements ----------------------------------------------


INMEM = """
import json, time, numpy as np, bloomkit
keys = np.load({keys!r}, mmap_mode="r")
n = len(keys)
t0 = time.perf_counter()
f = bloomkit.BlockedBloomFilter(n, 0.01)
for i in range(0, n, {chunk}):
    f.add_many(keys[i:i + {chunk}])
t1 = time.perf_counter()
f.save({out!r})
t2 = time.perf_counter()
print(json.dumps({{"build_s": t1 - t0, "save_s": t2 - t1}}))
"""

CREATE = """
import json, time, numpy as np, bloomkit
keys = np.load({keys!r}, mmap_mode="r")
n = len(keys)
t0 = time.perf_counter()
f = bloomkit.create({out!r}, n, 0.01, kind=bloomkit.BlockedBloomFilter)
for i in range(0, n, {chunk}):
    f.add_many(keys[i:i + {chunk}])
t1 = time.perf_counter()
f.close()
t2 = time.perf_counter()
print(json.dumps({{"add_s": t1 - t0, "close_s": t2 - t1}}))
"""

QUERY = """
import json, time, numpy as np, bloomkit
keys = np.load({keys!r}, mmap_mode="r")
absent = np.load({absent!r})
q = np.ascontiguousarray(keys[:{qn}])
res = {{}}
t = time.perf_counter(); f = bloomkit.load({path!r}); res["load_s"] = time.perf_counter() - t
clock = time.thread_time  # CPU time of this thread: descheduling on a shared machine not counted
assert f.contains_many(q).all()
t = time.perf_counter(); m = bloomkit.open({path!r}); res["open_s"] = time.perf_counter() - t
m.contains_many(q)  # fault the file's pages in (the page cache holds them)
# In memory and mapped alternated, best of 5 each: a burst of another
# tenant's memory traffic then costs both the same round.
best, best_m = 1e9, 1e9
for _ in range(5):
    t = clock(); f.contains_many(q); best = min(best, clock() - t)
    t = clock(); m.contains_many(q); best_m = min(best_m, clock() - t)
res["batch_ns"] = best * 1e9 / len(q)
res["mapped_batch_ns"] = best_m * 1e9 / len(q)
m.close()
fp = int(np.count_nonzero(f.contains_many(absent)))
res["fpr"] = fp / len(absent)
res["fpr_se"] = (0.01 * 0.99 / len(absent)) ** 0.5
few = q[:200_000].tolist()
t = clock()
assert all(k in f for k in few)
res["single_ns"] = (clock() - t) * 1e9 / len(few)
del f
t = time.perf_counter(); bloomkit.verify({path!r}); res["verify_s"] = time.perf_counter() - t
print(json.dumps(res))
"""

THP = """
import json, time, numpy as np, bloomkit
keys = np.load({keys!r}, mmap_mode="r")
n = len(keys)
clock = time.thread_time
t = clock()
f = bloomkit.BlockedBloomFilter(n, 0.01)
for i in range(0, n, {chunk}):
    f.add_many(keys[i:i + {chunk}])
build = clock() - t
q = np.ascontiguousarray(keys[:{qn}])
best = 1e9
for _ in range(3):
    t = clock(); f.contains_many(q); best = min(best, clock() - t)
huge = next(int(x.split()[1]) for x in open("/proc/self/smaps_rollup")
            if x.startswith("AnonHugePages:"))
print(json.dumps({{"build_ns": build * 1e9 / n, "batch_ns": best * 1e9 / len(q),
                  "huge_kib": huge}}))
"""

ARROW_READ = """
import json, time, numpy as np, pyarrow.parquet as pq
t = time.perf_counter()
rows = 0
pf = pq.ParquetFile({path!r})
for b in pf.iter_batches(batch_size=65536, columns=[{col!r}]):
    c = b.column(0)
    rows += len(c)
    if c.type == "int64":
        c.to_numpy(zero_copy_only=False)
print(json.dumps({{"read_s": time.perf_counter() - t, "rows": rows}}))
"""


def probe(work: Path, nbytes: int) -> dict[str, float]:
    exe = work / "line_probe"
    if not exe.exists():
        cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
        if cc is None:
            return {}
        subprocess.run([cc, "-O2", "-o", str(exe), str(HERE / "line_probe.c")], check=True)
    out = {}
    for mode in ("nothp", "thp"):
        r = subprocess.run([str(exe), str(nbytes), str(1 << 22), mode], capture_output=True,
                           text=True, check=True)
        fields = dict(kv.split("=") for kv in r.stdout.split())
        out[f"limit_{mode}_ns"] = float(fields["ns_per_read"])
    return out


def measure(n: int, work: Path, only: set[str], seed: int, reps: int = 2) -> dict[str, Any]:
    row: dict[str, Any] = {"n": n, "load_start": _load()}
    keys, absent = make_keys(work, n, seed)
    built = work / f"cli-{n}.bkf"
    if "npy" in only or "query" in only:
        for _rep in range(reps):  # back to back, twice: the pair's ratio is the figure
            inmem = run_child(INMEM.format(keys=str(keys), out=str(work / f"mem-{n}.bkf"),
                                           chunk=CHUNK), work)
            cl = cli(work, "build", keys, "-o", built, "-q")
            row.setdefault("inmem", []).append(inmem)
            row.setdefault("npy", []).append(cl)
        row["file_bytes"] = built.stat().st_size
    if "create" in only:
        for _rep in range(reps):
            c = run_child(CREATE.format(keys=str(keys), out=str(work / f"create-{n}.bkf"),
                                        chunk=CHUNK), work)
            inmem = run_child(INMEM.format(keys=str(keys), out=str(work / f"mem-{n}.bkf"),
                                           chunk=CHUNK), work)
            row.setdefault("create", []).append(c)
            row.setdefault("inmem_create", []).append(inmem)
            os.unlink(work / f"create-{n}.bkf")
    if "query" in only:
        row["query"] = run_child(QUERY.format(keys=str(keys), absent=str(absent),
                                              path=str(built), qn=min(n, QUERY_N)), work)
    if "thp" in only:  # the same in-memory build and query with and without huge pages
        for _rep in range(reps):
            for off in ("0", "1"):
                os.environ["BLOOMKIT_NO_THP"] = off
                try:
                    r = run_child(THP.format(keys=str(keys), chunk=CHUNK, qn=min(n, QUERY_N)),
                                  work)
                finally:
                    del os.environ["BLOOMKIT_NO_THP"]
                row.setdefault("thp" if off == "0" else "nothp", []).append(r)
    if "probe" in only:
        row["probe"] = probe(work, max(row.get("file_bytes", n * 12 // 10), 1 << 21))
    if "parquet" in only or "strings" in only:
        pqf = make_parquet(work, n, keys)
        row["parquet_bytes"] = pqf.stat().st_size
        for col, name in (("i", "parquet"), ("s", "strings")):
            if name not in only:
                continue
            for _rep in range(reps):
                rd = run_child(ARROW_READ.format(path=str(pqf), col=col), work)
                b = cli(work, "build", pqf, "--column", col, "-o", work / f"pq-{n}.bkf", "-q")
                row.setdefault(name, []).append({"arrow": rd, "build": b})
    if "text" in only:
        txt = make_text(work, n, keys)
        row["text_bytes"] = txt.stat().st_size
        row["text"] = cli(work, "build", txt, "--capacity", str(n), "-o",
                          work / f"txt-{n}.bkf", "-q")
    if "merge" in only and built.exists():
        row["merge"] = cli(work, "merge", built, built, "-o", work / f"merged-{n}.bkf", "-q")
        row["verify"] = cli(work, "verify", built, "-q")
    return row


# ---- Begin logic for the table -------------------------------------------------------


def _best(runs: list[dict[str, Any]], key: str) -> float:
    return min(r[key] for r in runs)


def _mib(b: float) -> str:
    return f"{b / (1 << 20):,.0f} MiB"


def table(rows: list[dict[str, Any]]) -> str:
    lines = []
    for row in rows:
        n = row["n"]
        lines.append(f"### {n:.0e} keys (load average {row['load_start']} at the start)")
        lines.append("")
        lines.append("| what | figure | load |")
        lines.append("|---|---|---|")
        if "inmem" in row:
            # whole child processes on both sides (interpreter start included)
            ref = [r["wall_s"] for r in row["inmem"]]
            clis = [r["wall_s"] for r in row["npy"]]
            ratios = [c / m for c, m in zip(clis, ref, strict=True)]
            cpu = [c["cpu_s"] / m["cpu_s"] for c, m in zip(row["npy"], row["inmem"], strict=True)]
            lines.append(f"| in memory: build + save (whole process) | {min(ref):.1f} s "
                         f"({min(r['build_s'] for r in row['inmem']) * 1e9 / n:.0f} ns a key + "
                         f"{min(r['save_s'] for r in row['inmem']):.2f} s save), peak "
                         f"{_mib(min(r['peak_rss'] for r in row['inmem']))} | "
                         f"{row['inmem'][0]['load']} |")
            lines.append(f"| `bloomkit build keys.npy -o FILE` | {min(clis):.1f} s, peak "
                         f"{_mib(max(r['peak_rss'] for r in row['npy']))}; ratio to the line "
                         f"above {', '.join(f'{x:.2f}' for x in ratios)} (CPU time: "
                         f"{', '.join(f'{x:.2f}' for x in cpu)}) | {row['npy'][0]['load']} |")
            lines.append(f"| file size | {_mib(row['file_bytes'])} "
                         f"({row['file_bytes'] * 8 / n:.2f} bits a key) | |")
        if "create" in row:
            totals = [c["wall_s"] for c in row["create"]]
            rel = [c["wall_s"] / m["wall_s"]
                   for c, m in zip(row["create"], row["inmem_create"], strict=True)]
            cpu = [c["cpu_s"] / m["cpu_s"]
                   for c, m in zip(row["create"], row["inmem_create"], strict=True)]
            lines.append(f"| `create()` + `add_many` + `close` (shared file map) | "
                         f"{min(totals):.1f} s (whole process); ratio to in memory + save "
                         f"{', '.join(f'{x:.2f}' for x in rel)} (CPU time: "
                         f"{', '.join(f'{x:.2f}' for x in cpu)}) | {row['create'][0]['load']} |")
        if "query" in row:
            q = row["query"]
            lines.append(f"| batch query (`contains_many`, numpy, in memory) | "
                         f"{q['batch_ns']:.1f} ns a key | {q['load']} |")
            lines.append(f"| batch query on the mapped file | {q['mapped_batch_ns']:.1f} ns a key "
                         f"| {q['load']} |")
            lines.append(f"| `key in f` (Python int) | {q['single_ns']:.0f} ns a key | "
                         f"{q['load']} |")
            lines.append(f"| false-positive rate (10^7 absent keys) | {q['fpr']:.5f} "
                         f"(target 0.01 +- {3 * q['fpr_se']:.5f} at 3 SE) | |")
            lines.append(f"| load / mmap open / verify | {q['load_s']:.2f} s / "
                         f"{q['open_s'] * 1e3:.2f} ms / {q['verify_s']:.2f} s | {q['load']} |")
        if "thp" in row:
            for name, label in (("thp", "huge pages"), ("nothp", "4 KiB pages")):
                r = row[name]
                b = ", ".join(f"{x['build_ns']:.1f}" for x in r)
                q = ", ".join(f"{x['batch_ns']:.1f}" for x in r)
                lines.append(f"| in memory, {label} (`BLOOMKIT_NO_THP={int(name == 'nothp')}`): "
                             f"build / batch query | "
                             f"{b} / {q} ns a key "
                             f"(AnonHugePages {r[0]['huge_kib'] >> 10} MiB) | {r[0]['load']} |")
        if row.get("probe"):
            p, q = row["probe"], row.get("query", {})
            extra = ""
            if "batch_ns" in q:
                extra = (f"; batch query / limit: in memory (huge pages) "
                         f"{q['batch_ns'] / p['limit_thp_ns']:.2f}, mapped (4 KiB pages) "
                         f"{q['mapped_batch_ns'] / p['limit_nothp_ns']:.2f}")
            lines.append(f"| random line read limit (line_probe.c) | {p['limit_thp_ns']:.1f} ns "
                         f"with huge pages, {p['limit_nothp_ns']:.1f} ns with 4 KiB{extra} | |")
        for name, label in (("parquet", "Parquet int64"), ("strings", "Parquet 20-char strings")):
            if name in row:
                rd = [r["arrow"]["wall_s"] for r in row[name]]
                bd = [r["build"]["wall_s"] for r in row[name]]
                rel = [b / r for b, r in zip(bd, rd, strict=True)]
                cpu = [r["build"]["cpu_s"] / r["arrow"]["cpu_s"] for r in row[name]]
                lines.append(f"| `bloomkit build` {label} | {min(bd):.1f} s, peak "
                             f"{_mib(max(r['build']['peak_rss'] for r in row[name]))}; pyarrow "
                             f"alone {min(rd):.1f} s; ratio {', '.join(f'{x:.2f}' for x in rel)} "
                             f"(CPU time: {', '.join(f'{x:.2f}' for x in cpu)}) "
                             f"| {row[name][0]['build']['load']} |")
        if "text" in row:
            t = row["text"]
            lines.append(f"| `bloomkit build keys.txt` ({_mib(row['text_bytes'])} of decimal "
                         f"lines) | {t['wall_s']:.1f} s ({t['wall_s'] * 1e9 / n:.0f} ns a key), "
                         f"peak {_mib(t['peak_rss'])} | {t['load']} |")
        if "merge" in row:
            m, v = row["merge"], row["verify"]
            lines.append(f"| `bloomkit merge` of 2 files / `verify` | {m['wall_s']:.1f} s, peak "
                         f"{_mib(m['peak_rss'])} / {v['wall_s']:.1f} s, peak "
                         f"{_mib(v['peak_rss'])} | {m['load']} |")
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e7,1e8", help="comma-separated key counts")
    ap.add_argument("--dir", default=None, help="work directory (kept; default a temporary one)")
    ap.add_argument("--only",
                    default="npy,create,query,thp,probe,parquet,strings,text,merge")
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--reps", type=int, default=2, help="back-to-back pairs per comparison")
    ap.add_argument("--json", default=None,
                    help="results file (default: scale.json in $BLOOMKIT_BENCH_OUT, else "
                         "<temp dir>/bloomkit-bench; never the source tree unless named)")
    args = ap.parse_args()
    info = machine.announce()
    if args.json is None:
        args.json = str(machine.results_dir() / "scale.json")
    only = set(args.only.split(","))
    work = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bkscale-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for size in args.sizes.split(","):
        n = int(float(size))
        print(f"# n = {n:,}: measuring {sorted(only)} (load {_load()})", flush=True)
        rows.append(measure(n, work, only, args.seed, args.reps))
        print(table(rows[-1:]), flush=True)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({"machine": info, "rows": rows}, indent=1))
    print(f"# stored {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
