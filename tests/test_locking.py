"""The writer lock protocol of bloomkit/_locking.py, step by step: one writer
at a time for the kinds whose adds are not atomic ORs (R28), the DIRTY mark
after openers that fail (R29), a live file is "in use", never "corrupt"
(R30), repair and recount after a killed writer, and replacing a file that
has writers.  The many-process versions are in tests/stress/."""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

import bloomkit
import kind_list
from bloomkit import (
    BloomFilter,
    CountingBloomFilter,
    CountMinSketch,
    CuckooFilter,
    FileInUseError,
    FormatError,
    QuotientFilter,
    TinyLFU,
    UncleanFileError,
    _locking,
)

SRC = str(Path(bloomkit.__file__).resolve().parents[1])
ENV = dict(os.environ, PYTHONPATH=SRC)
_OFF_FLAGS = 14

pytestmark = pytest.mark.skipif(not _locking.HAVE_OFD, reason="needs OFD record locks (Linux)")

# From the kind descriptors: every kind mapped for writing (not static, not
# growing) by its writer_lock
EXCLUSIVE = kind_list.classes(lambda k: k.writer_lock == "exclusive" and not k.static
                              and not k.grows)
SHARED = kind_list.classes(lambda k: k.writer_lock == "shared")


def make(cls: type[Any], n: int = 200) -> Any:
    if cls is CountMinSketch:
        f = CountMinSketch(2000, 4)
    elif cls is TinyLFU:
        f = TinyLFU(1000)
    else:
        f = cls(1000, 0.01)
    add(f, range(n))
    return f


def add(f: Any, keys: Any) -> None:
    if isinstance(f, TinyLFU):
        f.record_many(list(keys))
    else:
        f.add_many(list(keys))


def present(f: Any, keys: Any) -> bool:
    if isinstance(f, TinyLFU):
        return all(f.estimate(k) >= 1 for k in keys)
    if isinstance(f, CountMinSketch):
        return all(f.estimate(k) >= 1 for k in keys)
    return all(f.contains_many(list(keys)))


def dirty(path: Path) -> bool:
    with open(path, "rb") as fh:
        (flags,) = struct.unpack_from("<H", fh.read(64), _OFF_FLAGS)
    return bool(flags & 1)


def python(code: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=ENV,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bloomkit", *map(str, args)], env=ENV,
                          capture_output=True, text=True, timeout=120)


def hold_writer(path: Path, started: str = "in") -> subprocess.Popen[str]:
    """A process that opens ``path`` "r+", says ``started`` and waits for a
    line on stdin before closing."""
    proc = python(f"""
        import sys, bloomkit
        f = bloomkit.open({str(path)!r}, "r+")
        print({started!r}, flush=True)
        sys.stdin.readline()
        f.close()
    """)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line == started, proc.stderr.read() if proc.stderr else line
    return proc


def release(proc: subprocess.Popen[str]) -> None:
    _, err = proc.communicate("\n", timeout=60)
    assert proc.returncode == 0, err


@pytest.fixture(params=EXCLUSIVE, ids=lambda c: c.__name__)
def exclusive_cls(request: pytest.FixtureRequest) -> type[Any]:
    c: type[Any] = request.param
    return c


class WriterLockTests:
    """R28: a kind whose adds are not one atomic OR admits one writer."""

    def test_kinds(self) -> None:
        assert [c for c in EXCLUSIVE if _locking.shared_writers(c)] == []
        assert [c for c in SHARED if not _locking.shared_writers(c)] == []
        for k in kind_list.descriptors():  # the lock follows the descriptor, kind by kind
            assert _locking.shared_writers(getattr(bloomkit, k.name)) == (
                k.writer_lock == "shared"), k.name
        assert EXCLUSIVE and SHARED

    def test_second_writer_is_refused_or_times_out(
        self, exclusive_cls: type[Any], tmp_path: Path
    ) -> None:
        path = tmp_path / "x.bkf"
        make(exclusive_cls).save(path)
        proc = hold_writer(path)
        try:
            with pytest.raises(FileInUseError, match="in use: another process holds its writer"):
                bloomkit.open(path, "r+", timeout=0)
            t0 = time.monotonic()
            with pytest.raises(FileInUseError, match=r"waited 0\.3 s"):
                bloomkit.open(path, "r+", timeout=0.3)
            assert time.monotonic() - t0 >= 0.3
            with bloomkit.open(path) as r:  # readers take no lock
                assert present(r, range(200))
        finally:
            release(proc)
        with bloomkit.open(path, "r+", timeout=0) as f:  # free again
            add(f, range(200, 300))
        assert not dirty(path)
        assert present(bloomkit.load(path), range(300))

    def test_second_writer_waits_then_joins(
        self, exclusive_cls: type[Any], tmp_path: Path
    ) -> None:
        path = tmp_path / "x.bkf"
        make(exclusive_cls).save(path)
        proc = hold_writer(path)
        got: list[Any] = []

        def second() -> None:
            with bloomkit.open(path, "r+") as f:
                got.append(len(f) if not isinstance(f, TinyLFU) else 0)
                add(f, range(500, 600))

        t = threading.Thread(target=second)
        t.start()
        time.sleep(0.3)
        assert got == []  # still waiting
        release(proc)
        t.join(30)
        assert not t.is_alive() and len(got) == 1
        assert present(bloomkit.load(path), range(200)) and not dirty(path)

    def test_same_process_second_writer_fails_fast(
        self, exclusive_cls: type[Any], tmp_path: Path
    ) -> None:
        path = tmp_path / "x.bkf"
        make(exclusive_cls).save(path)
        with bloomkit.open(path, "r+"):
            with pytest.raises(FileInUseError, match="this process has it open 'r\\+' already"):
                bloomkit.open(path, "r+")  # would otherwise wait for itself for ever
        assert not dirty(path)

    @pytest.mark.parametrize("cls", SHARED, ids=lambda c: c.__name__)
    def test_atomic_kinds_keep_many_writers(self, cls: type[Any], tmp_path: Path) -> None:
        path = tmp_path / "x.bkf"
        make(cls).save(path)
        proc = hold_writer(path)
        try:
            with bloomkit.open(path, "r+", timeout=0) as f:
                add(f, range(200, 300))
            assert dirty(path)  # the other writer is still in
        finally:
            release(proc)
        assert not dirty(path)
        assert present(bloomkit.load(path), range(300))

    def test_bad_timeout(self, tmp_path: Path) -> None:
        path = tmp_path / "x.bkf"
        make(BloomFilter).save(path)
        with pytest.raises(ValueError, match="timeout"):
            bloomkit.open(path, "r+", timeout=-1)

    def test_cli_add_waits_or_gives_up(self, tmp_path: Path) -> None:
        path = tmp_path / "q.bkf"
        make(QuotientFilter).save(path)
        proc = hold_writer(path)
        try:
            r = cli("add", path, "k1", "--wait", "0")
            assert r.returncode == 5, r.stderr
            assert "in use" in r.stderr and r.stderr.count("\n") == 1
            r = cli("add", path, "k1", "--wait", "0.2")
            assert r.returncode == 5 and "waiting for the writer lock (up to 0.2 s)" in r.stderr
            late = subprocess.Popen([sys.executable, "-m", "bloomkit", "add", str(path), "k2"],
                                    env=ENV, stderr=subprocess.PIPE, text=True)
            assert late.stderr is not None
            note = late.stderr.readline()  # said once it has to wait
            assert "another process is writing it; waiting for the writer lock" in note
            assert late.poll() is None
        finally:
            release(proc)
        _, err = late.communicate(timeout=60)
        assert late.returncode == 0, err
        assert cli("query", path, "k2").returncode == 0


class DirtyMarkTests:
    """R29: no file is left DIRTY without a live writer."""

    def test_issue_repro_foreign_flock(self, tmp_path: Path) -> None:
        # issue 23.2 verbatim: a shared flock held while the last writer
        # closes (what a failing opener used to hold) no longer keeps DIRTY
        p = tmp_path / "x.bkf"
        BloomFilter(1000, 0.01).save(p)
        w = bloomkit.open(p, "r+")
        w.add("x")
        fd = os.open(p, os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_SH)
        w.close()
        os.close(fd)
        assert "x" in bloomkit.load(p)

    @pytest.mark.parametrize("cls", [BloomFilter, CuckooFilter], ids=lambda c: c.__name__)
    def test_failing_opener_during_last_close(
        self, cls: type[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # An opener with a wrong secret is stopped inside its validation
        # while the last writer closes: it must not count as a writer.
        secret = b"0123456789abcdef"
        p = tmp_path / "x.bkf"
        cls(1000, 0.01, secret=secret).save(p)
        w = bloomkit.open(p, "r+", secret=secret)
        w.add("x")
        inside, go = threading.Event(), threading.Event()
        real = cls._from_buffer

        def slow(*a: Any, **k: Any) -> Any:
            inside.set()
            go.wait(10)
            return real(*a, **k)

        monkeypatch.setattr(cls, "_from_buffer", slow)
        errors: list[BaseException] = []

        def failing() -> None:
            try:
                bloomkit.open(p, "r+", secret=b"fedcba9876543210")
            except BaseException as exc:
                errors.append(exc)

        t = threading.Thread(target=failing)
        t.start()
        assert inside.wait(10)
        w.close()  # the real last writer
        go.set()
        t.join(10)
        assert len(errors) == 1 and "wrong secret" in str(errors[0])
        assert not dirty(p)
        assert "x" in bloomkit.load(p, secret=secret)

    def test_verify_true_opener_on_live_file_does_not_stick(self, tmp_path: Path) -> None:
        p = tmp_path / "x.bkf"
        BloomFilter(1000, 0.01).save(p)
        w = bloomkit.open(p, "r+")
        w.add("x")
        # another writer with verify=True joins a live file: structure only
        with bloomkit.open(p, "r+", verify=True) as v:
            v.add("y")
        assert dirty(p)
        w.close()
        assert not dirty(p)

    def test_next_writer_repairs_a_stale_mark(self, tmp_path: Path) -> None:
        p = tmp_path / "q.bkf"
        make(QuotientFilter, 100).save(p)
        _set_dirty_with_count(p, QuotientFilter, 7)  # as a killed writer leaves it
        with bloomkit.open(p, "r+") as f:
            assert len(f) == 100  # recounted on joining alone
        assert bloomkit.verify(p)["flags"] & 0xFF == 0

    def test_verify_true_writer_refuses_a_stale_mark(self, tmp_path: Path) -> None:
        p = tmp_path / "q.bkf"
        make(QuotientFilter, 100).save(p)
        _set_dirty_with_count(p, QuotientFilter, 7)
        with pytest.raises(UncleanFileError, match="bloomkit repair"):
            bloomkit.open(p, "r+", verify=True)
        assert dirty(p)  # left for repair, untouched


def _set_dirty_with_count(p: Path, cls: type[Any], count: int) -> None:
    """Make ``p`` look like a writer was killed after storing fingerprints
    but before updating the count: DIRTY set, count field wrong."""
    with open(p, "r+b") as fh:
        data = bytearray(fh.read())
        (flags,) = struct.unpack_from("<H", data, _OFF_FLAGS)
        struct.pack_into("<H", data, _OFF_FLAGS, flags | 1)
        struct.pack_into("<Q", data, 64 + _count_offset(cls), count)
        fh.seek(0)
        fh.write(data)


def _count_offset(cls: type[Any]) -> int:
    # the count field: found, not assumed: the only u64 of the parameters
    # that equals len() of a state holding 100 keys, 37 of them twice
    f = make(cls, 100)
    add(f, range(37))
    assert len(f) == 137
    params = f.to_bytes()[64:256]
    offs = [o for o in range(0, 192, 8) if struct.unpack_from("<Q", params, o)[0] == 137]
    assert len(offs) == 1
    return offs[0]


class RepairTests:
    @pytest.mark.parametrize("cls", [CuckooFilter, QuotientFilter, CountingBloomFilter],
                             ids=lambda c: c.__name__)
    def test_recount_is_exact(self, cls: type[Any], tmp_path: Path) -> None:
        p = tmp_path / "x.bkf"
        f = make(cls, 300)
        add(f, range(40))  # 40 keys twice: the count is of the multiset
        if cls is CountingBloomFilter:
            f.remove(299)
        n = len(f)
        f.save(p)
        _set_dirty_with_count(p, cls, 5)
        with pytest.raises(UncleanFileError, match="bloomkit repair"):
            bloomkit.verify(p)
        report = bloomkit.repair(p)
        assert report["was_dirty"] and report["count_before"] == 5
        assert report["count_after"] == n
        assert bloomkit.verify(p)["flags"] & 0xFF == 0
        assert len(bloomkit.load(p)) == n

    def test_counting_with_a_saturated_counter_keeps_its_count(self, tmp_path: Path) -> None:
        p = tmp_path / "c.bkf"
        f = CountingBloomFilter(1000, 0.01, counter_bits=4)
        for _ in range(20):
            f.add("hot")  # its counters saturate at 15
        f.save(p)
        _set_dirty_with_count(p, CountingBloomFilter, 11)
        assert bloomkit.repair(p)["count_after"] == 11  # the sum says nothing now

    def test_clean_file_and_live_writer(self, tmp_path: Path) -> None:
        p = tmp_path / "x.bkf"
        make(BloomFilter).save(p)
        assert bloomkit.repair(p)["was_dirty"] is False
        r = cli("repair", p)
        assert r.returncode == 0 and "nothing to repair" in r.stdout
        proc = hold_writer(p)
        try:
            with pytest.raises(FileInUseError):
                bloomkit.repair(p)
            r = cli("repair", p)
            assert r.returncode == 5 and "in use" in r.stderr
        finally:
            release(proc)

    def test_cli_message_points_to_repair(self, tmp_path: Path) -> None:
        p = tmp_path / "c.bkf"
        make(CuckooFilter, 50).save(p)
        _set_dirty_with_count(p, CuckooFilter, 3)
        for args in (("verify", p), ("query", p, "1"), ("merge", p, "-o", tmp_path / "m")):
            r = cli(*args)
            assert r.returncode == 5, (args, r.stderr)
            assert f"bloomkit repair {p}" in r.stderr, r.stderr
        r = cli("repair", p)
        assert r.returncode == 0 and "count 3 -> 50" in r.stdout, r.stderr
        assert cli("verify", p).returncode == 0

    def test_structure_broken_by_the_crash_is_corrupt(self, tmp_path: Path) -> None:
        p = tmp_path / "q.bkf"
        make(QuotientFilter, 100).save(p)
        with open(p, "r+b") as fh:  # DIRTY, and an empty slot with a remainder
            data = bytearray(fh.read())
            data[_OFF_FLAGS] |= 1
            hl = struct.unpack_from("<I", data, 20)[0]
            for i in range(hl, len(data)):
                if data[i] == 0:
                    data[i] = 0x80
                    break
            fh.seek(0)
            fh.write(data)
        with pytest.raises(FormatError) as info:
            bloomkit.repair(p)
        assert not isinstance(info.value, UncleanFileError)


class LiveFileTests:
    """R30: a file a writer is using is "in use" (exit 5), never "corrupt"."""

    @pytest.mark.parametrize("cls", [QuotientFilter, BloomFilter], ids=lambda c: c.__name__)
    def test_readers_of_a_live_file(self, cls: type[Any], tmp_path: Path) -> None:
        p = tmp_path / "x.bkf"
        make(cls).save(p)
        proc = hold_writer(p)
        try:
            for check in (bloomkit.verify, bloomkit.load,
                          lambda q: bloomkit.open(q, verify=True)):
                with pytest.raises(FileInUseError, match="in use: a writer has it open"):
                    check(p)
            with bloomkit.open(p) as r:
                with pytest.raises(FileInUseError):
                    r.verify()
            r2 = cli("verify", p)
            assert r2.returncode == 5 and "in use" in r2.stderr
        finally:
            release(proc)
        assert bloomkit.verify(p)["flags"] & 0xFF == 0

    def test_own_exclusive_writer_verifies(self, tmp_path: Path) -> None:
        p = tmp_path / "c.bkf"
        make(CuckooFilter).save(p)
        with bloomkit.open(p, "r+") as f:
            f.add_many(range(1000, 1100))
            assert f.verify()["kind_name"] == "CuckooFilter"


class ReplaceTests:
    """Issue 23.9: a file that writers have open is not replaced under them."""

    def test_save_create_build_merge_refuse(self, tmp_path: Path) -> None:
        p = tmp_path / "x.bkf"
        make(BloomFilter).save(p)
        keys = tmp_path / "k.txt"
        keys.write_text("a\nb\n")
        proc = hold_writer(p)
        try:
            with pytest.raises(FileInUseError, match="cannot replace it while a writer"):
                make(BloomFilter).save(p)
            with pytest.raises(FileInUseError):
                bloomkit.create(p, 100)
            r = cli("build", keys, "-o", p)
            assert r.returncode == 5 and "cannot replace" in r.stderr, r.stderr
            other = tmp_path / "y.bkf"
            make(BloomFilter).save(other)
            r = cli("merge", other, other, "-o", p)
            assert r.returncode == 5, r.stderr
            assert sorted(os.listdir(tmp_path)) == ["k.txt", "x.bkf", "y.bkf"]  # no temp left
        finally:
            release(proc)
        make(BloomFilter, 10).save(p)  # free again
        assert bloomkit.verify(p)["flags"] & 0xFF == 0

    def test_opener_follows_a_replacement(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # A writer opens the old file, is held up before it joins, and the
        # path is replaced meanwhile: it must join the new file, not write
        # into the unlinked old one.
        p = tmp_path / "q.bkf"
        make(QuotientFilter, 10).save(p)
        inside, go = threading.Event(), threading.Event()
        real = QuotientFilter._from_buffer
        calls: list[int] = []

        def slow(*a: Any, **k: Any) -> Any:
            calls.append(1)
            if len(calls) == 1:
                inside.set()
                go.wait(10)
            return real(*a, **k)

        monkeypatch.setattr(QuotientFilter, "_from_buffer", slow)
        done: list[int] = []

        def late_writer() -> None:
            with bloomkit.open(p, "r+") as f:
                f.add("late")
                done.append(len(f))

        t = threading.Thread(target=late_writer)
        t.start()
        assert inside.wait(10)
        make(QuotientFilter, 50).save(p)  # no writer has joined: allowed
        go.set()
        t.join(30)
        assert done == [51] and len(calls) == 2  # reopened the new file
        g = bloomkit.load(p)
        assert "late" in g and len(g) == 51

    def test_external_replace_warns_at_close(self, tmp_path: Path) -> None:
        p = tmp_path / "x.bkf"
        make(BloomFilter).save(p)
        f = bloomkit.open(p, "r+")
        f.add("lost")
        make(BloomFilter).save(tmp_path / "new.bkf")
        os.replace(tmp_path / "new.bkf", p)  # another program's rename
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            f.close()
        assert any("replaced or deleted" in str(w.message) for w in caught)
