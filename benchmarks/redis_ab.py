"""A/B of bloomkit.redis batch throughput: this checkout against an older commit.

    python benchmarks/redis_ab.py [--against 30cd81b] [--keys 100000] [--repeat 3]

Loads ``bloomkit.redis`` of the ``--against`` commit (``src/bloomkit/redis.py``
before the package split, else the ``src/bloomkit/redis/`` package) as a
second module next to the current one (both on the current ``_core``), starts
a redis-server on a free loopback port and runs add_many / contains_many of
both, interleaved in every repetition, on fresh keys; prints medians of
keys/s and of the server's and the client's CPU per key, and new/old ratios.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
_SRC = _ROOT / "src"
if any((_SRC / "bloomkit" / f"_core{suffix}").exists() for suffix in EXTENSION_SUFFIXES):
    sys.path.insert(0, str(_SRC))

import redis  # noqa: E402

from bloomkit import redis as new  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import machine  # noqa: E402
from redis_throughput import free_port, start_server, wait_ready  # noqa: E402


def load_old(commit: str, tmp: str) -> object:
    """bloomkit.redis of ``commit``: the single redis.py of commits before the
    package split, else the src/bloomkit/redis/ package (git archive)."""
    shown = subprocess.run(["git", "-C", str(_ROOT), "show", f"{commit}:src/bloomkit/redis.py"],
                           capture_output=True, text=True)
    if shown.returncode == 0:
        path = Path(tmp) / "redis_old.py"
        path.write_text(shown.stdout)
        spec = importlib.util.spec_from_file_location("bloomkit.redis_old", path)
    else:
        archive = subprocess.run(["git", "-C", str(_ROOT), "archive", commit,
                                  "src/bloomkit/redis"], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        pkg = Path(tmp) / "src" / "bloomkit" / "redis"
        spec = importlib.util.spec_from_file_location(
            "bloomkit.redis_old", pkg / "__init__.py", submodule_search_locations=[str(pkg)])
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bloomkit.redis_old"] = mod
    spec.loader.exec_module(mod)
    return mod


def server_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", default="30cd81b")
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if shutil.which("redis-server") is None:
        sys.exit("redis-server not found: apt-get install redis-server")
    machine.announce()
    tmp = tempfile.mkdtemp(prefix="bk-redis-ab-")
    old = load_old(args.against, tmp)
    port = free_port()
    proc = start_server(tmp, port)
    try:
        client = redis.Redis(host="127.0.0.1", port=port)
        wait_ready(client)
        pid = int(client.info("server")["process_id"])
        n = args.keys
        print(f"old = {args.against}, new = this checkout; {n:,} keys, {args.repeat} "
              f"interleaved repetitions; load average {os.getloadavg()[0]:.1f}")
        for layout in ("classic", "blocked"):
            res: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
            for rep in range(args.repeat):
                for label, mod in (("old", old), ("new", new)):
                    cls = mod.RedisBloomFilter  # type: ignore[attr-defined]
                    name = f"ab:{layout}:{label}:{rep}"
                    cls.delete_named(client, name)
                    f = cls.create(client, name, n, 0.01, layout=layout)
                    keys = [f"user:{rep}:{label}:{i}" for i in range(n)]
                    for op in ("add_many", "contains_many"):
                        s0, c0, t0 = server_cpu(pid), time.process_time(), time.perf_counter()
                        getattr(f, op)(keys)
                        wall = time.perf_counter() - t0
                        res.setdefault((op, label), []).append(
                            (n / wall, (server_cpu(pid) - s0) / n * 1e6,
                             (time.process_time() - c0) / n * 1e6))
                    f.delete()
            for op in ("add_many", "contains_many"):
                med = {label: [statistics.median(c) for c in zip(*res[(op, label)],
                                                                  strict=True)]
                       for label in ("old", "new")}
                for label in ("old", "new"):
                    m = med[label]
                    print(f"{layout:8} {op:14} {label}: {m[0]:>9,.0f} keys/s  server "
                          f"{m[1]:.2f} us/key  client {m[2]:.2f} us/key")
                o, w = med["old"], med["new"]
                print(f"{layout:8} {op:14} new/old: keys/s x{w[0] / o[0]:.2f}, server CPU "
                      f"x{w[1] / o[1]:.2f}, client CPU x{w[2] / o[2]:.2f}")
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
