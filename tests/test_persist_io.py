"""Saving without a second copy (R33), the messages of MemoryError, size limits
for huge and sparse files (R16, R33) and the temporary files of killed saves
(R22).  Companion of test_persist.py."""

from __future__ import annotations

import json
import os
import random
import signal
import struct
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

import bloomkit
from bloomkit import (
    BlockedBloomFilter,
    BloomFilter,
    CountingBloomFilter,
    CountMinSketch,
    CuckooFilter,
    QuotientFilter,
    ScalableBloomFilter,
    SizeLimitError,
    TinyLFU,
    _core,
    persist,
)

SRC = str(Path(bloomkit.__file__).resolve().parents[1])
ENV = dict(os.environ, PYTHONPATH=SRC)
LINUX = sys.platform.startswith("linux")


def _python(code: str, timeout: float = 300, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=ENV,
                          capture_output=True, text=True, timeout=timeout, **kw)


def _cli(*args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bloomkit", *map(str, args)], env=ENV,
                          capture_output=True, text=True, timeout=timeout)


def _state_size(capacity: int) -> int:
    """state_nbytes of BloomFilter(capacity) without allocating it."""
    head = BloomFilter._create_header(capacity, 0.01)
    (payload,) = struct.unpack_from("<Q", head, 32)
    return len(head) + int(payload)


# ---- save streams the live state ---------------------------------------------


def _samples() -> list[Any]:
    out: list[Any] = []
    for cls in (BloomFilter, BlockedBloomFilter, CountingBloomFilter, CuckooFilter,
                QuotientFilter):
        f = cls(3000, 0.01)
        f.add_many(range(2000))
        out.append(f)
    s = ScalableBloomFilter(100, 0.01)
    s.add_many(range(5000))  # several links
    c = CountMinSketch(200, 4)
    c.add_many(range(1000))
    t = TinyLFU(1000)
    t.record_many(range(3000))
    return [*out, s, c, t]


class StreamedSaveTests:
    def test_every_kind_saves_exactly_its_to_bytes(self, tmp_path: Path) -> None:
        for i, f in enumerate(_samples()):
            path = tmp_path / f"{i}.bkf"
            bloomkit.save(f, path)
            assert path.read_bytes() == f.to_bytes(), type(f).__name__
            assert bloomkit.load(path) == f

    def test_mapped_dirty_writer_saves_a_clean_sealed_copy(self, tmp_path: Path) -> None:
        src = tmp_path / "src.bkf"
        f = bloomkit.create(src, 10_000, 0.01)
        f.add_many(range(3000))
        assert f.dirty
        f.save(tmp_path / "copy.bkf")
        header = bloomkit.verify(tmp_path / "copy.bkf")  # checksum current, DIRTY clear
        assert header["flags"] & 0xFF == 0
        assert (tmp_path / "copy.bkf").read_bytes() == f.to_bytes()
        f.close()

    def test_streamed_checksum_equals_one_shot(self, rng: random.Random) -> None:
        for _ in range(200):
            data = rng.randbytes(rng.choice([0, 5, 200, 241, 300, 1025, 5000, 70_000]))
            seed = rng.getrandbits(64)
            cuts = sorted(rng.randrange(len(data) + 1) for _ in range(rng.randrange(6)))
            pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
            assert _core.xxh3_64_pieces(pieces, seed) == _core.xxh3_64(data, seed)

    def test_peak_memory_of_save_is_bounded(self, tmp_path: Path) -> None:
        """R33 (#16.6): save() of a 229 MiB filter adds no copy of it.  Before
        the fix it built dumps() first: maxrss grew by the filter's size."""
        out = tmp_path / "big.bkf"
        r = _python(f"""
            import resource, bloomkit
            f = bloomkit.BloomFilter(200_000_000, 0.01)
            f.add_many(range(0, 2_000_000_000, 1000))  # 2M keys: every page touched
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            bloomkit.save(f, {str(out)!r})
            after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            g = bloomkit.open({str(out)!r}, verify=True)
            print(f.state_nbytes, after - before, g == f)
            g.close()
        """)
        assert r.returncode == 0, r.stderr
        nbytes, growth_kib, same = r.stdout.split()
        assert int(nbytes) > 200 * 2**20 and same == "True"
        assert int(growth_kib) < 32 * 1024, f"save grew maxrss by {growth_kib} KiB"

    @pytest.mark.skipif(not LINUX, reason="RLIMIT_AS and /proc/self/statm")
    def test_save_works_where_a_copy_cannot_be_made(self, tmp_path: Path) -> None:
        out = tmp_path / "f.bkf"
        r = _python(f"""
            import resource, bloomkit
            f = bloomkit.BloomFilter(80_000_000, 0.01)  # 91 MiB
            f.add_many(range(0, 10**9, 1000))
            vm = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
            resource.setrlimit(resource.RLIMIT_AS, (vm + 48 * 2**20, resource.RLIM_INFINITY))
            try:
                f.to_bytes()
            except MemoryError as e:
                print("to_bytes:", e)
            bloomkit.save(f, {str(out)!r})
            print("saved")
        """)
        assert r.returncode == 0, r.stderr
        first, second = r.stdout.splitlines()
        assert first.startswith(f"to_bytes: cannot allocate {_state_size(80_000_000)} bytes (")
        assert "MiB) for a copy of the state" in first
        assert "bloomkit.save" in first
        assert second == "saved"
        assert bloomkit.verify(out)["kind_name"] == "BloomFilter"


# ---- MemoryError messages (#16.6) --------------------------------------------


@pytest.mark.skipif(not LINUX, reason="RLIMIT_AS makes the allocation fail everywhere")
class MemoryErrorTests:
    LIMIT = "import resource; resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))\n"

    def test_constructor_says_bytes_and_what_to_do(self) -> None:
        r = _python(self.LIMIT + textwrap.dedent("""
            import bloomkit
            try:
                bloomkit.BloomFilter(10**11)
            except MemoryError as e:
                print(e)
        """))
        assert r.returncode == 0, r.stderr
        msg = r.stdout.strip()
        assert msg.startswith(f"cannot allocate {_state_size(10**11)} bytes (111.6 GiB)"), msg
        assert "smaller capacity" in msg and "bloomkit.create(" in msg

    def test_cli_prints_the_message(self, tmp_path: Path) -> None:
        keys = tmp_path / "k.txt"
        keys.write_text("a\nb\n")
        code = self.LIMIT + (
            "import sys; from bloomkit.cli import main; sys.exit(main(sys.argv[1:]))")
        r = subprocess.run([sys.executable, "-c", code, "build", str(keys), "--capacity", "1e11",
                            "--layout", "classic",
                            "-o", str(tmp_path / "o.bkf")],
                           env=ENV, capture_output=True, text=True, timeout=120)
        assert r.returncode == 2
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("bloomkit build: error: cannot allocate ")
        assert "bytes (111.6 GiB)" in lines[0]
        assert not (tmp_path / "o.bkf").exists()


# ---- size limits: huge and sparse files (#23.5, R16, R33) ---------------------


def _sparse_file(path: Path, nbytes: int, kind: type[Any] = BloomFilter) -> int:
    """A valid header declaring about ``nbytes`` of payload, extended with a
    hole: a few KiB on disk."""
    head = kind._create_header(int(nbytes * 8 / 9.6), 0.01)
    (payload,) = struct.unpack_from("<Q", head, 32)
    with open(path, "wb") as fh:
        fh.write(head)
        try:
            fh.truncate(len(head) + payload)
        except OSError as exc:
            pytest.skip(f"this file system cannot hold a sparse {nbytes}-byte file: {exc}")
    st = path.stat()
    if st.st_blocks * 512 * 16 >= st.st_size:
        pytest.skip("this file system does not make sparse files")
    return st.st_size


class SparseFileTests:
    def test_library_refuses_a_1tib_sparse_file_before_any_pass(self, tmp_path: Path) -> None:
        path = tmp_path / "tera.bkf"
        size = _sparse_file(path, 2**40)
        # a subprocess: a regression would read 1 TiB (20+ minutes); the
        # timeout turns that into a failure instead of a hung suite
        r = _python(f"""
            import bloomkit
            p = {str(path)!r}
            for name, fn in [("open r+", lambda: bloomkit.open(p, "r+")),
                             ("verify", lambda: bloomkit.verify(p)),
                             ("open verify", lambda: bloomkit.open(p, verify=True)),
                             ("load", lambda: bloomkit.load(p)),
                             ("class open r+", lambda: bloomkit.BloomFilter.open(p, "r+"))]:
                try:
                    fn()
                    print(name, "accepted")
                except bloomkit.SizeLimitError as e:
                    print(name, "refused:", e)
            with bloomkit.open(p) as f:  # "r" without verify: O(1), no pass
                print("open r", f.capacity > 10**11, "k" in f)
        """, timeout=120)
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        for line in lines[:5]:
            assert "refused: " in line, line
            assert "sparse file" in line and f"max_bytes={size}" in line and "--max-bytes" in line
        assert lines[5] == "open r True False"

    def test_cli_refuses_or_reads_only_the_header(self, tmp_path: Path) -> None:
        path = tmp_path / "tera.bkf"
        size = _sparse_file(path, 2**40)
        for args in (["verify"], ["info"], ["query", "k"], ["add", "k"],
                     ["add", "k", "--no-verify"], ["verify", "--max-bytes", "64G"]):
            r = _cli(args[0], path, *args[1:])
            assert r.returncode == 2, (args, r.stderr)
            lines = r.stderr.strip().splitlines()
            assert len(lines) == 1 and "error:" in lines[0], (args, r.stderr)
            assert f"--max-bytes {size}" in lines[0] and "sparse" in lines[0]
        r = _cli("info", path, "--no-verify", "--json")
        assert r.returncode == 0, r.stderr
        info = json.loads(r.stdout)
        assert info["sparse"] is True and info["file_bytes"] == size
        assert info["allocated_bytes"] < 2**20
        assert "bits_set" not in info and "estimated_count" not in info
        assert "capacity" in info and "num_bits" in info
        r = _cli("query", path, "k", "--no-verify")
        assert r.returncode == 1 and r.stdout == "k\tno\n"

    def test_explicit_max_bytes_accepts_a_sparse_file(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(persist.checks, "SPARSE_MAX_BYTES", 2**20)
        path = tmp_path / "made.bkf"
        bloomkit.create(path, 20_000_000, 0.01).close()  # 23 MiB, mostly a hole
        size = path.stat().st_size
        if path.stat().st_blocks * 512 * 16 >= size:
            pytest.skip("create() did not make a sparse file here")
        with pytest.raises(SizeLimitError, match=f"max_bytes={size}"):
            bloomkit.open(path, "r+")
        with pytest.raises(SizeLimitError, match="sparse"):
            bloomkit.verify(path)
        f = bloomkit.open(path, "r+", max_bytes=size)
        f.add("x")
        f.close()
        assert bloomkit.verify(path, max_bytes=size)["kind_name"] == "BloomFilter"
        assert "x" in bloomkit.open(path)  # "r" without a pass: no limit

    def test_max_bytes_refuses_dense_files_too(self, tmp_path: Path) -> None:
        path = tmp_path / "a.bkf"
        bloomkit.save(BloomFilter(10_000), path)
        size = path.stat().st_size
        with pytest.raises(SizeLimitError, match=f"over max_bytes={size - 1}"):
            bloomkit.verify(path, max_bytes=size - 1)
        assert bloomkit.verify(path, max_bytes=size)["kind_name"] == "BloomFilter"
        for args in (["verify"], ["info"], ["query", "k"], ["add", "k"]):
            r = _cli(args[0], path, *args[1:], "--max-bytes", "1K")
            assert r.returncode == 2 and "over max_bytes=1024" in r.stderr, (args, r.stderr)
        r = _cli("verify", path, "--max-bytes", "0")
        assert r.returncode == 0, r.stderr
        r = _cli("verify", path, "--max-bytes", "lots")
        assert r.returncode == 2 and "not a size" in r.stderr


# ---- temporary files of killed saves (#23.9, R22) ------------------------------


def _leave_temp(path: Path, hold: bool) -> subprocess.Popen[str]:
    """A process that creates a temporary for ``path`` exactly as save() does,
    then dies without removing it (hold=False) or waits holding it."""
    code = f"""
        import os, sys, time
        from bloomkit import persist
        tmp, fd = persist.temps.create_temp({str(path)!r}, os.O_WRONLY)
        os.write(fd, b"x" * 4096)
        print(os.path.basename(tmp), flush=True)
        if {hold!r}:
            time.sleep(120)
        os._exit(0)  # like SIGKILL: nothing cleaned up
    """
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _names(d: Path) -> set[str]:
    return {p.name for p in d.iterdir()}


class TemporaryFileTests:
    def test_names_say_whose(self, tmp_path: Path) -> None:
        name = os.path.basename(persist.temps.temp_path(str(tmp_path / "f.bkf")))
        host, boot = persist.temps.host_boot()
        assert name.startswith(f".f.bkf.{host}-{boot}-{os.getpid()}-") and name.endswith(".bktmp")

    def test_dead_writers_temp_is_removed_by_the_next_save(self, tmp_path: Path) -> None:
        path = tmp_path / "f.bkf"
        proc = _leave_temp(path, hold=False)
        out, err = proc.communicate(timeout=60)
        dead = out.strip()
        assert proc.returncode == 0 and dead in _names(tmp_path), err
        [t] = persist.temps.temporaries(path)
        assert t["name"] == dead and t["status"] == "stale" and t["bytes"] == 4096
        bloomkit.save(BloomFilter(100), path)
        assert _names(tmp_path) == {"f.bkf"}

    def test_live_writers_temp_is_kept(self, tmp_path: Path) -> None:
        path = tmp_path / "f.bkf"
        proc = _leave_temp(path, hold=True)
        try:
            assert proc.stdout is not None
            live = proc.stdout.readline().strip()
            assert [t["status"] for t in persist.temps.temporaries(path)] == ["live"]
            bloomkit.save(BloomFilter(100), path)
            bloomkit.create(path, 100).close()
            assert _names(tmp_path) == {"f.bkf", live}
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
        assert [t["status"] for t in persist.temps.temporaries(path)] == ["stale"]
        bloomkit.create(path, 100).close()  # create() cleans too
        assert _names(tmp_path) == {"f.bkf"}

    @pytest.mark.skipif(sys.platform == "win32", reason="flock")
    def test_a_locked_temp_of_a_dead_pid_is_kept(self, tmp_path: Path) -> None:
        """The pid in the name is gone (reused pid, another pid namespace) but
        a process still holds the lock: not stale."""
        gone = _dead_pid()
        host, boot = persist.temps.host_boot()
        tmp = tmp_path / f".f.bkf.{host}-{boot}-{gone}-abcdef.bktmp"
        tmp.write_bytes(b"x")
        holder = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(f"""
                import fcntl, os, time
                fd = os.open({str(tmp)!r}, os.O_RDONLY)
                fcntl.flock(fd, fcntl.LOCK_SH)
                print("locked", flush=True)
                time.sleep(120)
            """)], stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
            assert [t["status"] for t in persist.temps.temporaries(tmp_path / "f.bkf")] == ["live"]
            bloomkit.save(BloomFilter(100), tmp_path / "f.bkf")
            assert tmp.exists()
        finally:
            holder.send_signal(signal.SIGKILL)
            holder.communicate()
        bloomkit.save(BloomFilter(100), tmp_path / "f.bkf")
        assert not tmp.exists()

    def test_foreign_and_old_names_are_reported_never_removed(self, tmp_path: Path) -> None:
        host, boot = persist.temps.host_boot()
        other = "000000" if host != "000000" else "111111"
        foreign = tmp_path / f".f.bkf.{other}-{boot}-{_dead_pid()}-abcdef.bktmp"
        old = tmp_path / ".f.bkf.0123456789ab.bktmp"
        unrelated = tmp_path / ".f.bkf.x.0123456789ab.bktmp"  # a temp of "f.bkf.x"
        for p in (foreign, old, unrelated):
            p.write_bytes(b"x")
        temps = persist.temps.temporaries(tmp_path / "f.bkf")
        assert [(t["name"], t["status"]) for t in temps] == sorted(
            [(foreign.name, "foreign"), (old.name, "foreign")])
        bloomkit.save(BloomFilter(100), tmp_path / "f.bkf")
        assert foreign.exists() and old.exists() and unrelated.exists()

    def test_verify_and_info_mention_leftovers(self, tmp_path: Path) -> None:
        path = tmp_path / "f.bkf"
        bloomkit.save(BloomFilter(100), path)
        proc = _leave_temp(path, hold=False)
        dead = proc.communicate(timeout=60)[0].strip()
        r = _cli("verify", path)
        assert r.returncode == 0 and "ok" in r.stdout
        assert f"note: {tmp_path / dead} (4096 bytes): left by a killed save" in r.stderr
        r = _cli("info", path, "--json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["temporaries"] == [
            {"name": dead, "bytes": 4096, "status": "stale"}]
        assert "note:" in r.stderr
        bloomkit.save(BloomFilter(100), path)
        r = _cli("verify", path)
        assert r.returncode == 0 and r.stderr == ""

    def test_sigkill_during_saves_then_save_cleans_up(
        self, tmp_path: Path, rng: random.Random
    ) -> None:
        """#23.9: killed mid-save, a writer leaves a full-size temporary; it
        is stale at once and the next save removes it."""
        path = tmp_path / "f.bkf"
        left = 0
        for _ in range(4):
            proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
                import bloomkit
                f = bloomkit.BloomFilter(20_000_000, 0.01)  # 23 MiB: most of the time is writing
                print("go", flush=True)
                while True:
                    f.save({str(path)!r})
            """)], env=ENV, stdout=subprocess.PIPE, text=True)
            assert proc.stdout is not None and proc.stdout.readline().strip() == "go"
            time.sleep(rng.uniform(0.05, 0.5))
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
            temps = persist.temps.temporaries(path)
            assert all(t["status"] == "stale" for t in temps), temps
            left += len(temps)
            if path.exists():
                assert bloomkit.verify(path)["kind_name"] == "BloomFilter"
        bloomkit.save(BloomFilter(100), path)
        assert _names(tmp_path) == {"f.bkf"}
        print(f"temporaries left by 4 kills: {left}")


def _dead_pid() -> int:
    """A pid that no process has now (a child that has exited and been reaped)."""
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(proc.stdout)
