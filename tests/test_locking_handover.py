"""Batches that hold a shared file alone (issue #19; py_common.h,
bkpy_state_hold_file; bloomkit/_locking.py, WAITING).

A Bloom writer of a shared map ("r+", create()) ORs its bits in with
atomic instructions so that writers in other processes never lose bits.
When no other process writes the file, a large add_many batch converts its
WRITERS lock to exclusive and ORs with plain stores instead; a process that
wants to join meanwhile asks for the file back (WAITING) and gets it within
2^18 keys, whatever its timeout.  These tests assert: the plain path runs
exactly when the batch is alone (``_hold_file()`` counts such batches), the
bytes are those of an in-memory build, a joiner is let in while a long
batch is still running, and two processes that overlap this way lose no
bit (R31)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

import bloomkit
from bloomkit import BlockedBloomFilter, BloomFilter, _locking

np = pytest.importorskip("numpy")

pytestmark = pytest.mark.skipif(not _locking.HAVE_OFD,
                                reason="batches hold a file alone only with OFD locks (Linux)")

BATCH_MIN = 4096  # BKBLOOM_STAGE_MIN (py_bloom.c): smaller batches stay atomic


def _keys(rng: random.Random, n: int) -> Any:
    return np.random.default_rng(rng.getrandbits(64)).integers(0, 2**63 - 1, n, dtype=np.int64)


@pytest.mark.parametrize("kind", [BlockedBloomFilter, BloomFilter])
def test_alone_only_when_sole_writer(tmp_path: Path, rng: random.Random, kind: type) -> None:
    """A large numpy batch of the only writer runs alone; a small batch, a
    list, or a batch while a second writer (another object, its own lock)
    is in run atomically; the bytes equal an in-memory build."""
    path = tmp_path / "f.bkf"
    a, b, c, d = (_keys(rng, n) for n in (50_000, BATCH_MIN - 1, 20_000, 30_000))
    f = bloomkit.create(path, 200_000, 0.01, kind=kind)
    try:
        assert f._hold_file() == 0
        f.add_many(a)
        assert f._hold_file() == 1
        f.add_many(b)                   # below the threshold
        f.add_many(c.tolist())          # not a buffer: hashed with the GIL
        assert f._hold_file() == 1
        g = bloomkit.open(path, "r+")
        try:
            f.add_many(d)               # another writer is in: atomic
            g.add_many(d[::-1].copy())
            assert (f._hold_file(), g._hold_file()) == (1, 0)
        finally:
            g.close()
        f.add_many(d)                   # alone again
        assert f._hold_file() == 2
    finally:
        f.close()
    ref = kind(200_000, 0.01)
    for keys in (a, b, c, d):
        ref.add_many(keys)
    got = bloomkit.load(path)
    assert got == ref
    assert got.contains_many(np.concatenate([a, b, c, d])).all()


def test_not_alone_while_another_process_writes(tmp_path: Path, rng: random.Random) -> None:
    path = tmp_path / "f.bkf"
    bloomkit.create(path, 100_000, 0.01, kind=BlockedBloomFilter).close()
    other = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent("""
            import sys, bloomkit
            m = bloomkit.open(sys.argv[1], "r+")
            print("in", flush=True)
            sys.stdin.readline()
            m.close()
        """), str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout is not None and other.stdout.readline().strip() == "in"
        f = bloomkit.open(path, "r+")
        try:
            f.add_many(_keys(rng, 20_000))
            assert f._hold_file() == 0
        finally:
            f.close()
    finally:
        other.communicate("\n", timeout=60)
    assert other.returncode == 0


_LONG_BATCH = textwrap.dedent("""
    import sys, numpy as np, bloomkit
    seed, n, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    keys = np.random.default_rng([seed, 0]).integers(0, 2**63 - 1, n)
    m = bloomkit.open(path, "r+")
    print("start", flush=True)
    m.add_many(keys)
    print("end", m._hold_file(), flush=True)
    m.close()
""")


def _start_long_batch(path: Path, seed: int, n: int) -> subprocess.Popen[str]:
    """Process A: one numpy batch of n keys into the shared file at path;
    returns once A has printed "start" (its batch is about to begin)."""
    bloomkit.create(path, n, 0.01, kind=BlockedBloomFilter).close()
    a = subprocess.Popen([sys.executable, "-c", _LONG_BATCH, str(seed), str(n), str(path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert a.stdout is not None and a.stdout.readline().strip() == "start"
    time.sleep(0.05)  # let A's batch take the file
    return a


def _check_both_builds(a: subprocess.Popen[str], path: Path, seed: int, n: int,
                       mine: Any) -> None:
    """A ended having held the file alone, and the file holds every bit of
    A's keys and of ``mine`` (the joiner's), byte for byte."""
    out, err = a.communicate(timeout=600)
    assert a.returncode == 0, err[-2000:]
    assert out.split() == ["end", "1"], out  # A's batch had held the file alone
    ref = BlockedBloomFilter(n, 0.01)
    ref.add_many(np.random.default_rng([seed, 0]).integers(0, 2**63 - 1, n))
    ref.add_many(mine)
    got = bloomkit.load(path)
    assert bytes(got.to_bytes())[128:] == bytes(ref.to_bytes())[128:]
    assert all(got.contains_many(mine))


def test_joiner_is_let_in_during_a_long_batch(tmp_path: Path, rng: random.Random) -> None:
    """Process A adds one long batch alone; this process opens the file
    "r+" with timeout=0 while A's batch runs: it joins (A hands the file
    back) before A's batch ends, then adds its own keys while A finishes
    atomically.  The file ends with every bit of both builds."""
    seed = rng.getrandbits(32)
    n = 3 * 10**7
    path = tmp_path / "shared.bkf"
    mine = np.random.default_rng([seed, 1]).integers(0, 2**63 - 1, 200_000)
    a = _start_long_batch(path, seed, n)
    try:
        t0 = time.monotonic()
        f = bloomkit.open(path, "r+", timeout=0)
        waited = time.monotonic() - t0
        try:
            still_running = a.poll() is None
            f.add_many(mine)
            assert f._hold_file() == 0  # A is in: atomic
        finally:
            f.close()
        print(f"joined after {waited:.3f} s; A still running then: {still_running}")
        assert still_running, "the joiner was let in only after A's whole batch"
        _check_both_builds(a, path, seed, n, mine)
    finally:
        if a.poll() is None:
            a.kill()


def test_cli_add_is_let_in_during_a_long_batch(tmp_path: Path, rng: random.Random) -> None:
    """docs/cli.md's promise: `bloomkit add --wait 0` while a Python
    writer's long batch holds the Bloom file alone asks for the file back
    and adds its keys before that batch ends (no exit 5 for the wait)."""
    seed = rng.getrandbits(32)
    n = 6 * 10**7
    path = tmp_path / "shared.bkf"
    mine = [b"cli-key-%d" % i for i in range(1000)]
    keyfile = tmp_path / "keys.txt"
    keyfile.write_bytes(b"\n".join(mine) + b"\n")
    a = _start_long_batch(path, seed, n)
    try:
        t0 = time.monotonic()
        cli = subprocess.run([sys.executable, "-m", "bloomkit", "add", str(path), "--wait", "0",
                              "--from", str(keyfile), "-v"],
                             capture_output=True, text=True, timeout=120)
        took = time.monotonic() - t0
        still_running = a.poll() is None
        print(f"bloomkit add took {took:.3f} s; A still running after it: {still_running}")
        assert cli.returncode == 0, cli.stderr
        assert "1000 keys" in cli.stderr
        assert still_running, "bloomkit add got in only after A's whole batch"
        _check_both_builds(a, path, seed, n, mine)
    finally:
        if a.poll() is None:
            a.kill()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_fork_makes_both_sides_atomic(tmp_path: Path, rng: random.Random) -> None:
    """A forked child shares the parent's open file description, writer
    lock included: neither side may hold the file alone afterwards (both
    batches are atomic), and no bit of either is lost."""
    path = tmp_path / "f.bkf"
    a, b, c = (_keys(rng, 50_000) for _ in range(3))
    f = bloomkit.create(path, 200_000, 0.01, kind=BlockedBloomFilter)
    try:
        f.add_many(a)
        assert f._hold_file() == 1
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: add, report whether it held the file, exit
            try:
                os.close(r)
                before = f._hold_file()
                f.add_many(b)
                os.write(w, b"%d" % (f._hold_file() - before))
            finally:
                os._exit(0)
        os.close(w)
        f.add_many(c)
        with os.fdopen(r, "rb") as fh:
            child_held = fh.read()
        os.waitpid(pid, 0)
        assert child_held == b"0"
        assert f._hold_file() == 1  # the parent's batch after the fork was atomic
    finally:
        f.close()
    got = bloomkit.load(path)
    for keys in (a, b, c):
        assert got.contains_many(keys).all()
    ref = BlockedBloomFilter(200_000, 0.01)
    for keys in (a, b, c):
        ref.add_many(keys)
    assert bytes(got.to_bytes())[128:] == bytes(ref.to_bytes())[128:]
