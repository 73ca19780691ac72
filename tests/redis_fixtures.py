"""Real redis-server processes for the Redis tests: one server, or a 3-node cluster.

Servers listen on free loopback ports (127.0.0.1 only, never 6379) in a temp
directory and are torn down by the fixtures of tests/test_redis.py.  When
the binaries (or the ``redis`` package) are missing the tests skip with the
install command, except in CI (``CI=true``), where they fail.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

INSTALL_HINT = (
    "install the server with `apt-get install redis-server` (Debian/Ubuntu; it brings "
    "redis-cli) and the client with `pip install 'bloomkit[redis]'`"
)


def require_redis() -> None:
    """Skip (or, in CI, fail) unless redis-server, redis-cli and redis-py are present."""
    missing = [b for b in ("redis-server", "redis-cli") if shutil.which(b) is None]
    try:
        import redis  # noqa: F401
    except ImportError:
        missing.append("the Python package redis")
    if not missing:
        return
    msg = f"Redis tests need {', '.join(missing)}: {INSTALL_HINT}"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(msg + " (CI must run them: .ci/run installs the server)", pytrace=False)
    pytest.skip(msg)


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(cluster: bool = False) -> int:
    """A free loopback port (and port + 10000 free too, for a cluster bus)."""
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port == 6379 or (cluster and (port + 10000 > 65535 or not _bindable(port + 10000))):
            continue
        return port
    raise RuntimeError("no free loopback port found")


def no_retry() -> Any:
    """A redis-py Retry that never retries (errors surface at once)."""
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return Retry(NoBackoff(), 0)


class RedisServer:
    """One redis-server process on 127.0.0.1:port with its own directory."""

    def __init__(self, directory: Path, port: int | None = None, *args: str,
                 cluster: bool = False) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = port if port is not None else free_port(cluster)
        assert self.port != 6379
        self.args = list(args)
        if cluster:
            self.args += ["--cluster-enabled", "yes", "--cluster-config-file",
                          f"nodes-{self.port}.conf", "--cluster-node-timeout", "5000"]
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> RedisServer:
        cmd = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
               "--dir", str(self.dir), "--save", "", "--appendonly", "no",
               "--daemonize", "no", "--logfile", f"redis-{self.port}.log", *self.args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 15
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited ({self.proc.returncode}): "
                                   f"{self.log_tail()}")
            try:
                if self.client(retry=no_retry(), socket_connect_timeout=1).ping():
                    return self
            except Exception:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.05)

    def client(self, **kwargs: Any) -> Any:
        import redis

        return redis.Redis(host="127.0.0.1", port=self.port, **kwargs)

    def log_tail(self) -> str:
        p = self.dir / f"redis-{self.port}.log"
        return p.read_text(errors="replace")[-2000:] if p.exists() else "(no log)"

    def stop(self) -> None:
        """A clean shutdown (saves when persistence is on), then wait for exit."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()  # SIGTERM: redis shuts down cleanly (fsyncs the AOF)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def restart(self) -> RedisServer:
        self.stop()
        return self.start()


class RedisClusterNodes:
    """Three cluster-enabled servers joined with ``redis-cli --cluster create``."""

    def __init__(self, directory: Path) -> None:
        self.nodes = [RedisServer(directory / f"node{i}", None, cluster=True) for i in range(3)]

    def start(self) -> RedisClusterNodes:
        for n in self.nodes:
            n.start()
        addrs = [f"127.0.0.1:{n.port}" for n in self.nodes]
        subprocess.run(
            ["redis-cli", "--cluster", "create", *addrs, "--cluster-replicas", "0",
             "--cluster-yes"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, timeout=60,
        )
        deadline = time.monotonic() + 30
        while True:
            infos = [n.client().cluster("info") for n in self.nodes]
            if all(i.get("cluster_state") == "ok" and int(i.get("cluster_known_nodes", 0)) == 3
                   for i in infos):
                return self
            if time.monotonic() > deadline:
                raise RuntimeError(f"cluster did not become ok: {infos}")
            time.sleep(0.1)

    def client(self, **kwargs: Any) -> Any:
        from redis.cluster import RedisCluster

        return RedisCluster(host="127.0.0.1", port=self.nodes[0].port, **kwargs)

    def stop(self) -> None:
        for n in self.nodes:
            n.stop()
