"""Partitioned batches of large blocked filters (issue #19; bk_bloom.h,
bk_bloom_add_many_part): buffer keys (numpy arrays, ByteKeys) to a blocked
filter of 16 MiB or more are staged 2^18 hashes at a time and
radix-partitioned by block range before they are applied.  The partition is
stable and OR commutes, so the state bytes (bits and count), the "new"
counts add_many returns and every query answer must be exactly those of the
plain loops (``BloomBase._partition(False)``), on both sides of the
threshold, for every key kind, in memory and in a shared file map (atomic
ORs), at every stage boundary, and with threads and processes writing at
once (R31: no false negative, no lost bit)."""

from __future__ import annotations

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
from bloomkit import BlockedBloomFilter, _core
from bloomkit._core import ByteKeys

np = pytest.importorskip("numpy")

THRESHOLD_BITS = 16 << 23        # BK_BLOOM_PART_MIN_BYTES, in bits
STAGE = 1 << 18                  # BKBLOOM_STAGE (py_bloom.c)
SIZES = {
    "below": THRESHOLD_BITS - 512,          # one block short: the plain loops
    "at": THRESHOLD_BITS,
    "above": THRESHOLD_BITS + 512 * 4097,   # not a power of two of blocks
}


@pytest.fixture(autouse=True)
def _restore_partition() -> Iterator[None]:
    before = _core.BloomBase._partition()
    yield
    _core.BloomBase._partition(before)


def _np_rng(rng: random.Random) -> Any:
    return np.random.default_rng(rng.getrandbits(63))


def _keys(kind: str, n: int, g: Any) -> Any:
    """n keys of one buffer kind (about 1 in 8 a repeat of an earlier key)."""
    if kind == "bytekeys":
        lens = g.integers(0, 24, n)
        offsets = np.zeros(n + 1, dtype=np.int64)
        offsets[1:] = np.cumsum(lens)
        data = g.integers(0, 256, int(offsets[-1]), dtype=np.uint8).tobytes()
        return ByteKeys(offsets, data)
    if kind == "bytes":
        return g.integers(0, 256, (n, 12), dtype=np.uint8).view("S12").ravel()
    if kind == "bool":
        return g.integers(0, 2, n).astype(bool)
    if kind == "strided":
        return g.integers(-2**63, 2**63 - 1, 2 * n, dtype=np.int64)[::2]
    dtype = np.dtype(kind)
    info = np.iinfo(dtype)
    a = g.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    a[n - n // 8:] = a[: n // 8]
    return a


def _build(make: Callable[[], Any], batches: list[Any], on: bool) -> tuple[Any, list[int]]:
    _core.BloomBase._partition(on)
    f = make()
    return f, [f.add_many(b) for b in batches]


def _payload(f: Any) -> bytes:
    return bytes(f.to_bytes())


class PartitionIdentityTests:
    @pytest.mark.parametrize("size", sorted(SIZES))
    @pytest.mark.parametrize("version", [0, 1])
    @pytest.mark.parametrize("kind", ["int64", "uint64", "int32", "int8", "bool", "bytes",
                                      "strided", "bytekeys"])
    def test_in_memory_same_bytes_counts_answers(self, rng: random.Random, size: str,
                                                 version: int, kind: str) -> None:
        g = _np_rng(rng)
        lens = [STAGE + 1, 5000, 4095] if kind not in ("bool", "int8") else [STAGE, 4096]
        batches = [_keys(kind, n, g) for n in lens]
        probes = [_keys(kind, STAGE + 3000, g), batches[0]]

        def make() -> Any:
            return BlockedBloomFilter.with_size(SIZES[size], 6, seed=7, layout_version=version)

        plain, new_plain = _build(make, batches, False)
        part, new_part = _build(make, batches, True)
        assert new_part == new_plain
        assert len(part) == len(plain)
        assert _payload(part) == _payload(plain)
        for q in probes:
            _core.BloomBase._partition(True)
            a = part.contains_many(q)
            _core.BloomBase._partition(False)
            assert a.tobytes() == plain.contains_many(q).tobytes()
        assert part.contains_many(batches[0]).all()  # no false negative

    @pytest.mark.parametrize("size", ["below", "above"])
    @pytest.mark.parametrize("kind", ["int64", "bytes", "bytekeys"])
    def test_mapped_same_bytes_counts_answers(self, tmp_path: Path, rng: random.Random,
                                              size: str, kind: str) -> None:
        """A file opened "r+" is a shared map: the adds take the atomic ORs,
        and its queries go through the stage (owned states do not)."""
        g = _np_rng(rng)
        batches = [_keys(kind, n, g) for n in (3 * STAGE + 777, STAGE, 4096)]
        empty = BlockedBloomFilter.with_size(SIZES[size], 7, seed=3)
        results = {}
        for on in (False, True):
            path = tmp_path / f"f{on}.bkf"
            empty.save(path)
            _core.BloomBase._partition(on)
            m = bloomkit.open(path, "r+")
            new = [m.add_many(b) for b in batches]
            answers = [m.contains_many(q).tobytes()
                       for q in (batches[0], _keys(kind, 2 * STAGE + 5, _np_rng(random.Random(1))))]
            results[on] = (new, len(m), _payload(m), answers)
            bloomkit.close(m)
            results[on] += (path.read_bytes(),)
            assert bloomkit.verify(path)
        assert results[True] == results[False]
        assert set(results[True][3][0]) == {1}

    def test_lists_and_small_batches_unchanged(self, rng: random.Random) -> None:
        """Lists (hashed with the GIL) and batches under 4096 keys keep the
        plain chunks; either way the bits are the same."""
        g = _np_rng(rng)
        ints = _keys("int64", 20_000, g)

        def make() -> Any:
            return BlockedBloomFilter.with_size(SIZES["above"], 6)

        plain, _ = _build(make, [ints.tolist(), ints[:100]], False)
        part, _ = _build(make, [ints.tolist(), ints[:100]], True)
        assert _payload(part) == _payload(plain)


class PartitionConcurrencyTests:
    def test_threads_add_and_query(self, rng: random.Random) -> None:
        """R31: four threads add disjoint numpy batches (GIL-free, one at a
        time under the batch lock) while two query keys already added:
        no false negative, and the final bytes equal one thread's build."""
        g = _np_rng(rng)
        chunks = [_keys("int64", STAGE + 999 * t, g) for t in range(4)]
        base = _keys("int64", 50_000, g)

        def make() -> Any:
            return BlockedBloomFilter.with_size(SIZES["above"], 6)

        ref, _ = _build(make, [base, *chunks], False)
        _core.BloomBase._partition(True)
        f = make()
        f.add_many(base)
        errors: list[BaseException] = []
        stop = threading.Event()
        old = sys.getswitchinterval()
        sys.setswitchinterval(1e-5)

        def add(t: int) -> None:
            try:
                f.add_many(chunks[t])
            except BaseException as e:  # reported below
                errors.append(e)

        def query() -> None:
            try:
                while not stop.is_set():
                    assert f.contains_many(base).all(), "false negative"
            except BaseException as e:  # reported below
                errors.append(e)

        try:
            qs = [threading.Thread(target=query) for _ in range(2)]
            ws = [threading.Thread(target=add, args=(t,)) for t in range(4)]
            for t in qs + ws:
                t.start()
            for t in ws:
                t.join(600)
            stop.set()
            for t in qs:
                t.join(600)
        finally:
            sys.setswitchinterval(old)
        assert not errors, errors
        assert _payload(f) == _payload(ref)

    def test_processes_share_one_map(self, tmp_path: Path, rng: random.Random) -> None:
        """Two processes add to one "r+" file at once through the partitioned
        atomic path: the file ends with every bit of both (the union of two
        private builds), none lost."""
        seed = rng.getrandbits(32)
        empty = BlockedBloomFilter.with_size(SIZES["above"], 6)
        path = tmp_path / "shared.bkf"
        empty.save(path)
        script = textwrap.dedent("""
            import sys, numpy as np, bloomkit
            seed, part, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
            keys = np.random.default_rng([seed, part]).integers(0, 2**63 - 1, 3 * 2**18)
            m = bloomkit.open(path, "r+")
            for i in range(0, len(keys), 100_000):
                m.add_many(keys[i:i + 100_000])
            bloomkit.close(m)
            print("ok")
        """)
        procs = [subprocess.Popen([sys.executable, "-c", script, str(seed), str(p), str(path)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for p in (0, 1)]
        for p in procs:
            out, err = p.communicate(timeout=600)
            assert p.returncode == 0 and out.strip() == "ok", err[-2000:]
        _core.BloomBase._partition(False)
        ref = BlockedBloomFilter.with_size(SIZES["above"], 6)
        for p in (0, 1):
            ref.add_many(np.random.default_rng([seed, p]).integers(0, 2**63 - 1, 3 * 2**18))
        got = bloomkit.load(path)
        # the count depends on which process met a shared key first; the bits do not
        assert _payload(got)[128:] == _payload(ref)[128:]
