"""Throughput of bloomkit.redis on loopback, against a local filter.

    python benchmarks/redis_throughput.py [--keys 200000] [--repeat 3] [--port P]
                                          [--sliding] [--smoke]

Starts its own redis-server on a free 127.0.0.1 port (unless --port names a
running one), then reports, for the classic and the blocked layout:
pipelined add_many / contains_many in keys/s (median of --repeat runs) next
to the local filter's batch calls, the CPU the server and the client spent
per key (from /proc: CPU time, so less disturbed by a busy machine than wall
time; wall throughput is bounded by max(server, client) per key once the two
run on separate cores), and the latency of single add / ``in`` calls
(median and 99th percentile).

Each repetition runs both batch paths of a plain client, interleaved:
``raw`` (the default: hand-packed commands, one round trip ahead of the
replies) and ``redis-py`` (``raw_protocol = False``: redis-py pipelines, the
path cluster clients take); ``raw/redis-py`` is the ratio of their medians.

``--sliding`` adds RedisSlidingBloomFilter (count mode, the same capacity and
rate): add_many, and contains_many through both of its paths (``snapshot``:
the whole filter read in one MULTI and answered locally; ``script``: one
read-only script call per chunk), each repetition interleaved with the
blocked RedisBloomFilter's raw batches on the same server; ``sliding/blocked``
is the ratio of keys/s (issue #18's target: at least 0.5).  ``--smoke`` is a
small run (20,000 keys, one repetition, 100 latency calls) that only checks
the script works; its figures mean little.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

# Prefer the checkout's in-place build (python setup.py build_ext --inplace) over an install.
_SRC = Path(__file__).resolve().parent.parent / "src"
if any((_SRC / "bloomkit" / f"_core{suffix}").exists() for suffix in EXTENSION_SUFFIXES):
    sys.path.insert(0, str(_SRC))

import redis  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import machine  # noqa: E402

from bloomkit import BlockedBloomFilter, BloomFilter  # noqa: E402
from bloomkit.redis import RedisBloomFilter  # noqa: E402


def free_port() -> int:
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port != 6379:
            return port


def start_server(directory: str, port: int, prefix: tuple[str, ...] = (),
                 quiet: bool = False) -> subprocess.Popen[bytes]:
    """A throwaway redis-server on loopback: no persistence, files in `directory`.

    `prefix` runs it under another program (valgrind); `quiet` drops its stderr.
    """
    return subprocess.Popen(
        [*prefix, "redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", directory],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL if quiet else None,
    )


def wait_ready(client: redis.Redis, tries: int = 100, pause: float = 0.05) -> None:
    """Wait until the server answers PING (a fresh server needs a moment)."""
    for _ in range(tries):
        try:
            client.ping()
            return
        except redis.ConnectionError:
            time.sleep(pause)


def server_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(fn, pid: int) -> tuple[float, float, float]:  # type: ignore[no-untyped-def]
    s0, c0, t0 = server_cpu(pid), time.process_time(), time.perf_counter()
    fn()
    return time.perf_counter() - t0, server_cpu(pid) - s0, time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--latency-calls", type=int, default=2000)
    ap.add_argument("--port", type=int, default=0, help="use a running server")
    ap.add_argument("--paths", default="raw,redis-py",
                    help="comma-separated batch paths to measure: raw, redis-py")
    ap.add_argument("--sliding", action="store_true",
                    help="also RedisSlidingBloomFilter against the blocked batches")
    ap.add_argument("--smoke", action="store_true", help="a small run (checks it works)")
    args = ap.parse_args()
    if args.smoke:
        args.keys, args.repeat, args.latency_calls = 20_000, 1, 100
    machine.announce()

    proc = None
    tmp = tempfile.mkdtemp(prefix="bk-redis-bench-")
    port = args.port
    if not port:
        if shutil.which("redis-server") is None:
            sys.exit("redis-server not found: apt-get install redis-server")
        port = free_port()
        proc = start_server(tmp, port)
    client = redis.Redis(host="127.0.0.1", port=port)
    wait_ready(client)
    pid = int(client.info("server")["process_id"])
    n = args.keys
    print(f"redis-server {client.info('server')['redis_version']} on 127.0.0.1:{port}, "
          f"{n:,} keys, median of {args.repeat}; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} CPUs")
    paths = [p for p in args.paths.split(",") if p]
    if not paths or set(paths) - {"raw", "redis-py"}:
        sys.exit("--paths takes raw and/or redis-py")
    print(f"{'layout':8} {'operation':14} {'path':9} {'keys/s':>10} {'local keys/s':>13} "
          f"{'server us/key':>14} {'client us/key':>14}")
    try:
        for layout, local_cls in (("classic", BloomFilter), ("blocked", BlockedBloomFilter)):
            results: dict[tuple[str, str], list[tuple[float, float, float, float]]] = {
                (op, path): [] for op in ("add_many", "contains_many") for path in paths}
            for rep in range(args.repeat):
                for path in paths:  # interleaved: each repetition runs every path
                    name = f"bench:{layout}:{rep}:{path}"
                    RedisBloomFilter.delete_named(client, name)
                    f = RedisBloomFilter.create(client, name, n, 0.01, layout=layout)
                    f.raw_protocol = path == "raw"
                    keys = [f"user:{rep}:{path}:{i}" for i in range(n)]
                    local = local_cls(n, 0.01)
                    lt = time.perf_counter()
                    local.add_many(keys)
                    ladd = n / (time.perf_counter() - lt)
                    w, s, c = timed(lambda f=f, keys=keys: f.add_many(keys), pid)
                    results[("add_many", path)].append((n / w, ladd, s / n * 1e6, c / n * 1e6))
                    lt = time.perf_counter()
                    local.contains_many(keys)
                    lcont = n / (time.perf_counter() - lt)
                    w, s, c = timed(lambda f=f, keys=keys: f.contains_many(keys), pid)
                    results[("contains_many", path)].append(
                        (n / w, lcont, s / n * 1e6, c / n * 1e6))
                    f.delete()
            for op in ("add_many", "contains_many"):
                meds = {}
                for path in paths:
                    rows = results[(op, path)]
                    med = [statistics.median(col) for col in zip(*rows, strict=True)]
                    meds[path] = med
                    print(f"{layout:8} {op:14} {path:9} {med[0]:>10,.0f} {med[1]:>13,.0f} "
                          f"{med[2]:>14.2f} {med[3]:>14.2f}")
                if len(meds) == 2:
                    r, p = meds["raw"], meds["redis-py"]
                    print(f"{layout:8} {op:14} {'raw/redis-py':13} keys/s x{r[0] / p[0]:.2f}, "
                          f"server CPU x{r[2] / p[2]:.2f}, client CPU x{r[3] / p[3]:.2f}")
            f = RedisBloomFilter.create(client, f"bench:{layout}:lat", n, 0.01, layout=layout)
            for op in ("add", "in"):
                lat = []
                for i in range(args.latency_calls):
                    key = f"lat:{i}"
                    t0 = time.perf_counter()
                    if op == "add":
                        f.add(key)
                    else:
                        _ = key in f
                    lat.append(time.perf_counter() - t0)
                lat.sort()
                print(f"{layout:8} {op + ' latency':14} median {lat[len(lat) // 2] * 1e6:.0f} us, "
                      f"p99 {lat[int(len(lat) * 0.99)] * 1e6:.0f} us")
            f.delete()
        if args.sliding:
            sliding(client, pid, n, args.repeat)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


SLIDING_OPS = ("blocked add_many", "blocked contains_many", "sliding add_many",
               "sliding contains_many snapshot", "sliding contains_many script")


def sliding_rep(client: redis.Redis, pid: int, n: int, rep: int
                ) -> tuple[dict[str, tuple[float, float, float]], str]:
    """One repetition: (op -> (keys/s, server us/key, client us/key), shape)."""
    from bloomkit.redis import RedisSlidingBloomFilter

    keys = [f"sl:{rep}:{i}" for i in range(n)]
    b = RedisBloomFilter.create(client, f"bench:sl:blocked:{rep}", n, 0.01, layout="blocked")
    s = RedisSlidingBloomFilter.create(client, f"bench:sl:sliding:{rep}", n, 0.01)

    def query(per_key: int) -> None:
        s.snapshot_bytes_per_key = per_key
        s.contains_many(keys)

    runs = {"blocked add_many": lambda: b.add_many(keys),
            "blocked contains_many": lambda: b.contains_many(keys),
            "sliding add_many": lambda: s.add_many(keys),
            "sliding contains_many snapshot": lambda: query(10**9),
            "sliding contains_many script": lambda: query(0)}
    out = {}
    for op in SLIDING_OPS:
        w, sv, c = timed(runs[op], pid)
        out[op] = (n / w, sv / n * 1e6, c / n * 1e6)
    shape = (f"sliding: k={s.num_hashes}, l={s.generations}, {s.num_slices} slices of "
             f"{s.slice_bits} bits ({s.payload_len:,} bytes); blocked: "
             f"{b.num_bits // 8:,} bytes")
    b.delete()
    s.delete()
    return out, shape


def sliding(client: redis.Redis, pid: int, n: int, repeat: int) -> None:
    """RedisSlidingBloomFilter batches against blocked RedisBloomFilter batches."""
    results: dict[str, list[tuple[float, float, float]]] = {op: [] for op in SLIDING_OPS}
    shape = ""
    for rep in range(repeat):
        one, shape = sliding_rep(client, pid, n, rep)
        for op, row in one.items():
            results[op].append(row)
    print(shape)
    med = {op: [statistics.median(col) for col in zip(*results[op], strict=True)]
           for op in SLIDING_OPS}
    for op in SLIDING_OPS:
        print(f"{op:31} {med[op][0]:>10,.0f} keys/s  server {med[op][1]:.2f} us/key  "
              f"client {med[op][2]:.2f} us/key")
    add = med["sliding add_many"][0] / med["blocked add_many"][0]
    print(f"sliding/blocked add_many keys/s x{add:.2f}")
    for path in ("snapshot", "script"):
        q = med[f"sliding contains_many {path}"][0] / med["blocked contains_many"][0]
        print(f"sliding/blocked contains_many ({path}) keys/s x{q:.2f}")


if __name__ == "__main__":
    main()
