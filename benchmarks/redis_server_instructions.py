"""redis-server CPU instructions per key of bloomkit.redis batch calls (callgrind).

    python benchmarks/redis_server_instructions.py [--against 30cd81b] [--keys 5000]
                                                   [--sliding]

Runs redis-server under ``valgrind --tool=callgrind`` on a free loopback port,
warms it up (script cache, allocator), zeroes the counters, runs one
add_many or contains_many of --keys fresh keys on a 100,000-key filter and
dumps: the instruction count per key is steady on a busy machine, unlike
wall or CPU time.  With --against, the same for the bloomkit.redis of that commit
(loaded next to the current one, see redis_ab.py).  Needs valgrind.

``--sliding``: instead, add_many of the blocked RedisBloomFilter and of
RedisSlidingBloomFilter (count mode, capacity 20,000 at 1%, after a full
window of 20,000 adds, so the slices are as full as they get) and their
ratio: issue #18's target in instructions (at least half the keys/s is at
most twice the server's work a key, when the server is the bottleneck).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import machine
import redis
from redis_ab import load_old
from redis_throughput import free_port, start_server, wait_ready

from bloomkit import redis as new


def instructions_per_key(mod: object, layout: str, op: str, n: int) -> float:
    port = free_port()
    d = tempfile.mkdtemp(prefix="bk-redis-cg-")
    proc = start_server(d, port, ("valgrind", "--tool=callgrind",
                                  f"--callgrind-out-file={d}/cg.out"), quiet=True)
    try:
        client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=600)
        wait_ready(client, tries=600, pause=0.1)
        f = mod.RedisBloomFilter.create(client, "cg", 100_000, 0.01,  # type: ignore[attr-defined]
                                        layout=layout)
        keys = [f"user:{i}" for i in range(n)]
        f.add_many(keys[:2000])
        f.contains_many(keys[:2000])
        subprocess.run(["callgrind_control", "-z", str(proc.pid)], capture_output=True,
                       check=True)
        getattr(f, op)(keys)
        subprocess.run(["callgrind_control", "-d", str(proc.pid)], capture_output=True,
                       check=True)
        for _ in range(50):
            for fn in sorted(os.listdir(d)):
                if fn.startswith("cg.out."):
                    for line in Path(d, fn).read_text(errors="replace").splitlines():
                        if line.startswith(("totals:", "summary:")):
                            return int(line.split()[1]) / n
            time.sleep(0.1)
        raise RuntimeError("no callgrind dump")
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(d, ignore_errors=True)


def sliding_instructions_per_key(mod: object, n: int) -> tuple[float, float]:
    """(blocked, sliding) add_many instructions per key, steady state."""
    port = free_port()
    d = tempfile.mkdtemp(prefix="bk-redis-cg-")
    proc = start_server(d, port, ("valgrind", "--tool=callgrind",
                                  f"--callgrind-out-file={d}/cg.out"), quiet=True)
    dumps = 0

    def measure(fn: Any) -> float:
        nonlocal dumps
        subprocess.run(["callgrind_control", "-z", str(proc.pid)], capture_output=True,
                       check=True)
        fn()
        subprocess.run(["callgrind_control", "-d", str(proc.pid)], capture_output=True,
                       check=True)
        dumps += 1
        for _ in range(100):
            path = Path(d, f"cg.out.{dumps}")
            if path.exists():
                for line in path.read_text(errors="replace").splitlines():
                    if line.startswith(("totals:", "summary:")):
                        return int(line.split()[1]) / n
            time.sleep(0.1)
        raise RuntimeError("no callgrind dump")

    try:
        client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=600)
        wait_ready(client, tries=600, pause=0.1)
        cap = 20_000
        b = mod.RedisBloomFilter.create(client, "cgb", cap, 0.01,  # type: ignore[attr-defined]
                                        layout="blocked")
        s = mod.RedisSlidingBloomFilter.create(client, "cgs", cap, 0.01)  # type: ignore[attr-defined]
        b.add_many([f"warm:{i}" for i in range(cap)])
        s.add_many([f"warm:{i}" for i in range(cap)])
        keys = [f"user:{i}" for i in range(n)]
        return measure(lambda: b.add_many(keys)), measure(lambda: s.add_many(keys))
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(d, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", default=None, help="also measure this commit's bloomkit.redis")
    ap.add_argument("--keys", type=int, default=5000)
    ap.add_argument("--sliding", action="store_true",
                    help="blocked against sliding add_many (issue #18)")
    args = ap.parse_args()
    for tool in ("valgrind", "callgrind_control", "redis-server"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} not found")
    machine.announce()
    mods: list[tuple[str, object]] = [("new", new)]
    tmp = tempfile.mkdtemp(prefix="bk-redis-old-")
    if args.against:
        mods.insert(0, (args.against, load_old(args.against, tmp)))
    if args.sliding:
        print(f"redis-server instructions per key of add_many, {args.keys:,} keys after a "
              "full window (capacity 20,000, 1%)")
        for label, mod in mods:
            blocked, slid = sliding_instructions_per_key(mod, args.keys)
            print(f"{label:8} blocked {blocked:,.0f}, sliding {slid:,.0f} "
                  f"(sliding/blocked x{slid / blocked:.2f})")
        shutil.rmtree(tmp, ignore_errors=True)
        return
    print(f"redis-server instructions per key, {args.keys:,} keys on a 100,000-key filter")
    for layout in ("classic", "blocked"):
        for op in ("add_many", "contains_many"):
            got = {label: instructions_per_key(mod, layout, op, args.keys)
                   for label, mod in mods}
            text = ", ".join(f"{label} {v:,.0f}" for label, v in got.items())
            if len(got) == 2:
                a, b = got.values()
                text += f" (x{b / a:.2f})"
            print(f"{layout:8} {op:14} {text}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
