"""Files and memory maps: atomic save (R22), size guards (R16), mapped files
(R23), processes and threads adding to one map (R24) and the crash rule."""

from __future__ import annotations

import gc
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import bloomkit
from bloomkit import (
    BlockedBloomFilter,
    BloomFilter,
    ChecksumError,
    FormatError,
    UncleanFileError,
    UnsupportedFormatError,
    persist,
)

CLASSES = [BloomFilter, BlockedBloomFilter]
DIRTY_BIT = (14, 0)  # flags byte 14, bit 0 (docs/FORMAT.md, "Flags")
# the bloomkit under test (src/, or the sanitized build of .ci/asan.sh)
SRC = str(Path(bloomkit.__file__).resolve().parents[1])


@pytest.fixture(params=CLASSES, ids=["classic", "blocked"])
def cls(request: pytest.FixtureRequest) -> type[BloomFilter]:
    c: type[BloomFilter] = request.param
    return c


def _run_python(code: str, **kw: object) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw,  # type: ignore[call-overload]
    )


def _filled(cls: type[BloomFilter], n: int = 500, start: int = 0) -> BloomFilter:
    f = cls(1000, 0.01, seed=3)
    f.add_many(range(start, start + n))
    return f


class AtomicSaveTests:
    @pytest.mark.parametrize("victim", ["write", "pwrite", "fsync", "replace"])
    def test_failure_leaves_destination_and_no_temp(
        self, cls: type[BloomFilter], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        victim: str,
    ) -> None:
        old = _filled(cls, 100)
        path = tmp_path / "f.bkf"
        old.save(path)
        before = path.read_bytes()

        def boom(*a: object, **k: object) -> None:
            raise OSError(28, f"injected failure in {victim}")

        if victim == "write":
            # The state is written by C (_write_state): hand it a descriptor
            # it cannot write to, so that its first write(2) fails.
            real = persist.temps.create_temp

            def read_only_temp(p: str, access: int) -> tuple[str, int]:
                tmp, fd = real(p, access)
                ro = os.open(tmp, os.O_RDONLY)
                os.dup2(ro, fd)
                os.close(ro)
                return tmp, fd

            monkeypatch.setattr(persist.atomic, "create_temp", read_only_temp)
        else:
            monkeypatch.setattr(os, victim, boom)
        with pytest.raises(OSError, match="injected" if victim != "write" else None):
            _filled(cls, 900).save(path)
        monkeypatch.undo()
        assert path.read_bytes() == before
        assert sorted(p.name for p in tmp_path.iterdir()) == ["f.bkf"]

    def test_failure_without_destination_creates_nothing(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(5, "io")))
        with pytest.raises(OSError):
            bloomkit.save(_filled(BloomFilter), tmp_path / "new.bkf")
        monkeypatch.undo()
        assert list(tmp_path.iterdir()) == []

    def test_save_load_round_trip_and_mode(self, cls: type[BloomFilter], tmp_path: Path) -> None:
        f = _filled(cls)
        f.save(tmp_path / "a.bkf")
        g = bloomkit.load(tmp_path / "a.bkf")
        assert type(g) is cls and g == f and g.to_bytes() == f.to_bytes()
        assert (tmp_path / "a.bkf").stat().st_mode & 0o777 == 0o666 & ~_umask()

    def test_sigkill_during_saves_leaves_old_or_new(
        self, tmp_path: Path, rng: random.Random
    ) -> None:
        a, b = _filled(BloomFilter, 300), _filled(BloomFilter, 300, start=10_000)
        path = tmp_path / "f.bkf"
        a.save(path)
        valid = {a.to_bytes(), b.to_bytes()}
        for _ in range(3):
            proc = _run_python(f"""
                import bloomkit
                a = bloomkit.BloomFilter(1000, 0.01, seed=3); a.add_many(range(300))
                b = bloomkit.BloomFilter(1000, 0.01, seed=3); b.add_many(range(10000, 10300))
                print("go", flush=True)
                while True:
                    a.save({str(path)!r}); b.save({str(path)!r})
            """)
            assert proc.stdout is not None and proc.stdout.readline().strip() == "go"
            time.sleep(rng.uniform(0.01, 0.2))
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
            assert path.read_bytes() in valid
            assert bloomkit.load(path) in (a, b)


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


class SizeGuardTests:
    def test_max_bytes(self, tmp_path: Path) -> None:
        f = _filled(BloomFilter)
        data = f.to_bytes()
        with pytest.raises(FormatError, match="max_bytes"):
            bloomkit.loads(data, max_bytes=len(data) - 1)
        assert bloomkit.loads(data, max_bytes=len(data)) == f
        f.save(tmp_path / "a.bkf")
        with pytest.raises(FormatError, match="max_bytes"):
            bloomkit.load(tmp_path / "a.bkf", max_bytes=100)
        with pytest.raises(FormatError, match="max_bytes"):
            bloomkit.open(tmp_path / "a.bkf", max_bytes=100)

    def test_huge_declared_payload_is_refused_without_allocating(self, tmp_path: Path) -> None:
        """R16: a 64-byte file declaring a 2**40-byte payload."""
        proc = _run_python(f"""
            import resource, struct, bloomkit
            head = bytearray(bloomkit.BloomFilter(10, 0.01).to_bytes()[:64])
            struct.pack_into("<I", head, 20, 64)
            struct.pack_into("<Q", head, 32, 2**40)
            struct.pack_into("<Q", head, 40, 0)
            data = bytes(head)
            open({str(tmp_path / "big.bkf")!r}, "wb").write(data)
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            errors = []
            for fn in (lambda: bloomkit.loads(data),
                       lambda: bloomkit.BloomFilter.from_bytes(data),
                       lambda: bloomkit.load({str(tmp_path / "big.bkf")!r}),
                       lambda: bloomkit.open({str(tmp_path / "big.bkf")!r}),
                       lambda: bloomkit.open({str(tmp_path / "big.bkf")!r}, "r+"),
                       lambda: bloomkit.verify({str(tmp_path / "big.bkf")!r})):
                try:
                    fn()
                except bloomkit.FormatError as e:
                    errors.append(type(e).__name__)
            after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            print(len(errors), after - before)
        """)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        n_errors, growth_kib = map(int, out.split())
        assert n_errors == 6
        assert growth_kib < 16 * 1024


class MappedFileTests:
    def test_open_read_only(self, cls: type[BloomFilter], tmp_path: Path) -> None:
        f = _filled(cls)
        f.save(tmp_path / "a.bkf")
        with bloomkit.open(tmp_path / "a.bkf") as g:
            assert type(g) is cls and g.mapped and not g.writable
            assert all(g.contains_many(range(500)))
            assert g == f and len(g) == len(f)
            with pytest.raises(TypeError, match="read-only"):
                g.add(1)
            assert g.verify()["kind"] == cls._bk_kind
        assert not g.mapped  # detached: an empty stand-in, no dangling view
        assert 1 not in g

    def test_class_open_checks_the_kind(self, tmp_path: Path) -> None:
        BlockedBloomFilter(100).save(tmp_path / "b.bkf")
        with pytest.raises(FormatError, match="BlockedBloomFilter, not a BloomFilter"):
            BloomFilter.open(tmp_path / "b.bkf")
        with BlockedBloomFilter.open(tmp_path / "b.bkf") as g:
            assert isinstance(g, BlockedBloomFilter)

    def test_bad_mode(self, tmp_path: Path) -> None:
        BloomFilter(100).save(tmp_path / "a.bkf")
        with pytest.raises(ValueError, match="mode"):
            bloomkit.open(tmp_path / "a.bkf", "w")

    def test_r_plus_writes_into_the_file(self, cls: type[BloomFilter], tmp_path: Path) -> None:
        path = tmp_path / "a.bkf"
        _filled(cls).save(path)
        g = bloomkit.open(path, "r+")
        assert g.dirty
        with pytest.raises(UncleanFileError):
            bloomkit.load(path)  # marked open for writing
        with pytest.raises(UncleanFileError):
            bloomkit.verify(path)
        g.add_many(range(1000, 1200))
        g.add("a string key")
        g.flush()
        # flushed: the checksum on disk is current (DIRTY excluded from it)
        bloomkit._core.validate(path.read_bytes(), checksum=True, allow_dirty=True)
        assert g.verify()["kind"] == cls._bk_kind
        g.close()
        g.close()  # twice is harmless
        h = bloomkit.load(path)
        assert not h.dirty and all(h.contains_many(range(1000, 1200))) and "a string key" in h
        expected = _filled(cls)
        expected.add_many(range(1000, 1200))
        expected.add("a string key")
        assert h.to_bytes() == expected.to_bytes()

    def test_readers_see_writers(self, tmp_path: Path) -> None:
        path = tmp_path / "a.bkf"
        BloomFilter(10_000).save(path)
        with bloomkit.open(path, "r+") as w, bloomkit.open(path) as r:
            assert "k" not in r
            w.add("k")
            assert "k" in r

    def test_last_writer_clears_dirty(self, tmp_path: Path) -> None:
        path = tmp_path / "a.bkf"
        BloomFilter(1000).save(path)
        a = bloomkit.open(path, "r+")
        b = bloomkit.open(path, "r+")
        a.add(1)
        b.add(2)
        a.close()
        with pytest.raises(UncleanFileError):
            bloomkit.verify(path)  # b is still writing
        b.close()
        assert bloomkit.verify(path)["flags"] & 0xFF == 0
        g = bloomkit.load(path)
        assert 1 in g and 2 in g

    def test_dropped_writer_is_finalized(self, tmp_path: Path) -> None:
        path = tmp_path / "a.bkf"
        BloomFilter(1000).save(path)
        g = bloomkit.open(path, "r+")
        g.add("x")
        with pytest.warns(ResourceWarning):
            del g
            gc.collect()
        assert "x" in bloomkit.load(path)

    def test_open_is_lazy_and_verify_finds_corruption(
        self, cls: type[BloomFilter], tmp_path: Path
    ) -> None:
        path = tmp_path / "a.bkf"
        data = bytearray(_filled(cls).to_bytes())
        data[200] ^= 0x10
        path.write_bytes(bytes(data))
        with bloomkit.open(path) as g:  # O(1): the checksum is not read
            with pytest.raises(ChecksumError):
                g.verify()
        with pytest.raises(ChecksumError):
            bloomkit.verify(path)
        with pytest.raises(ChecksumError):
            bloomkit.open(path, verify=True)

    def test_unsupported_kind(self, tmp_path: Path) -> None:
        data = bytearray(BloomFilter(100).to_bytes())
        data[12] = 9  # a kind this build does not have
        data[40:48] = bloomkit._core.checksum(bytes(data)).to_bytes(8, "little")
        (tmp_path / "u.bkf").write_bytes(bytes(data))
        for fn in (bloomkit.open, bloomkit.load, bloomkit.verify):
            with pytest.raises(UnsupportedFormatError):
                fn(tmp_path / "u.bkf")

    def test_verify_in_memory(self, cls: type[BloomFilter]) -> None:
        assert bloomkit.verify(_filled(cls))["kind"] == cls._bk_kind


class ShortFileTests:
    """R23: a mapped file shorter (or longer) than its header claims."""

    def test_every_wrong_length_is_a_clean_error(
        self, cls: type[BloomFilter], tmp_path: Path
    ) -> None:
        data = _filled(cls).to_bytes()
        path = tmp_path / "t.bkf"
        lengths = [*range(0, 130), *range(len(data) - 70, len(data))]
        for n in lengths:
            path.write_bytes(data[:n])
            for fn in (lambda: bloomkit.open(path), lambda: bloomkit.open(path, "r+"),
                       lambda: bloomkit.verify(path), lambda: bloomkit.load(path)):
                with pytest.raises(FormatError):
                    fn()
        for extra in range(1, 17):
            path.write_bytes(data + b"\0" * extra)
            with pytest.raises(FormatError, match="trailing"):
                bloomkit.open(path)

    def test_file_truncated_after_save_is_not_sigbus(self, tmp_path: Path) -> None:
        path = tmp_path / "t.bkf"
        BloomFilter(100_000).save(path)
        os.truncate(path, 4096)
        with pytest.raises(FormatError, match="truncated"):
            bloomkit.open(path, "r+")
        assert path.stat().st_size == 4096


class CreateTests:
    def test_create_matches_an_in_memory_build(
        self, cls: type[BloomFilter], tmp_path: Path
    ) -> None:
        path = tmp_path / "c.bkf"
        secret = bytes(range(16))
        f = bloomkit.create(path, 5000, 0.001, kind=cls, seed=11, secret=secret)
        assert type(f) is cls and f.dirty and f.writable
        f.add_many(range(2000))
        f.close()
        ref = cls(5000, 0.001, seed=11, secret=secret)
        ref.add_many(range(2000))
        assert path.read_bytes() == ref.to_bytes()
        assert bloomkit.load(path, secret=secret) == ref

    def test_create_replaces_atomically_and_never_builds_in_memory(self, tmp_path: Path) -> None:
        path = tmp_path / "big.bkf"
        path.write_bytes(b"old")
        proc = _run_python(f"""
            import resource, bloomkit
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            f = bloomkit.BlockedBloomFilter.create({str(path)!r}, 100_000_000, 0.01)
            after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            f.add("x")
            print(f.state_nbytes, after - before)
            f.close()
        """)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        size, growth_kib = map(int, out.split())
        assert size > 100_000_000 and path.stat().st_size == size
        assert growth_kib < 16 * 1024
        assert bloomkit.verify(path)["flags"] & 0xFF == 0
        assert [p.name for p in tmp_path.iterdir()] == ["big.bkf"]

    def test_create_rejects_bad_arguments(self, tmp_path: Path) -> None:
        with pytest.raises(ValueError):
            bloomkit.create(tmp_path / "x.bkf", 0, 2.0)
        with pytest.raises(TypeError):
            bloomkit.create(tmp_path / "x.bkf", 10, kind=int)
        assert list(tmp_path.iterdir()) == []


class ConcurrencyTests:
    """R24: no lost update from processes or threads sharing one map."""

    def test_four_processes(self, cls: type[BloomFilter], tmp_path: Path) -> None:
        path = tmp_path / "shared.bkf"
        bloomkit.create(path, 400_000, 0.01, kind=cls).close()
        procs = [
            _run_python(f"""
                import bloomkit
                with bloomkit.open({str(path)!r}, "r+") as f:
                    lo = {i} * 100_000
                    for k in range(lo, lo + 50_000):   # per-key adds
                        f.add(k)
                    f.add_many(range(lo + 50_000, lo + 100_000))  # batch
                    f.add_many([f"s{{k}}" for k in range(lo, lo + 1000)])
            """)
            for i in range(4)
        ]
        for p in procs:
            _, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
        assert bloomkit.verify(path)["flags"] & 0xFF == 0  # the last closer cleared DIRTY
        g = bloomkit.load(path)
        assert all(g.contains_many(range(400_000)))
        assert all(g.contains_many([f"s{k}" for i in range(4)
                                    for k in range(i * 100_000, i * 100_000 + 1000)]))

    def test_threads(self, cls: type[BloomFilter], tmp_path: Path) -> None:
        np = pytest.importorskip("numpy")
        path = tmp_path / "shared.bkf"
        bloomkit.create(path, 400_000, 0.01, kind=cls).close()
        f1 = bloomkit.open(path, "r+")
        f2 = bloomkit.open(path, "r+")  # a second map of the same file

        def work(f: BloomFilter, i: int) -> None:
            keys = np.arange(i * 100_000, (i + 1) * 100_000, dtype=np.int64)
            for chunk in np.array_split(keys, 20):
                f.add_many(chunk)  # without the GIL

        threads = [threading.Thread(target=work, args=(f1 if i % 2 else f2, i))
                   for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        f1.close()
        f2.close()
        g = bloomkit.load(path)
        assert all(g.contains_many(np.arange(400_000, dtype=np.int64)))


class CrashRuleTests:
    def test_sigkilled_writer(self, cls: type[BloomFilter], tmp_path: Path) -> None:
        path = tmp_path / "crash.bkf"
        bloomkit.create(path, 100_000, 0.01, kind=cls).close()
        proc = _run_python(f"""
            import sys, time, bloomkit
            f = bloomkit.open({str(path)!r}, "r+")
            f.add_many(range(20_000))
            f.flush()
            f.add_many(range(20_000, 30_000))
            print("flushed", flush=True)
            time.sleep(60)
        """)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "flushed"
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        with bloomkit.open(path) as g:  # still opens
            assert g.dirty
            assert all(g.contains_many(range(20_000)))
            with pytest.raises(UncleanFileError, match="unclean"):
                g.verify()
        with pytest.raises(UncleanFileError):
            bloomkit.verify(path)
        with pytest.raises(UncleanFileError):
            bloomkit.load(path)
        bloomkit.open(path, "r+").close()  # recovery: reseal
        assert bloomkit.verify(path)["flags"] & 0xFF == 0
        assert all(bloomkit.load(path).contains_many(range(20_000)))


class OnePersistenceMechanismTests:
    """Issue #24: every registered bloomkit class gets its file API from the
    Persistent mixin, never from methods register_kind attaches (a class may
    still override one on purpose: BinaryFuseFilter.create refuses)."""

    def test_every_registered_kind_inherits_persistent(self) -> None:
        assert persist.kinds.KINDS, "no kinds registered"
        for kind, cls in sorted(persist.kinds.KINDS.items()):
            assert issubclass(cls, persist.Persistent), (kind, cls.__name__)
            attached = [name for name in persist.mixin.PERSISTENT_API
                        if cls.__dict__.get(name) is persist.Persistent.__dict__[name]]
            assert attached == [], (cls.__name__, attached)


class LoadReadsOnceTests:
    """bloomkit.load reads a file once, straight into the structure's aligned
    state buffer (issue #24): no intermediate bytes, one parse of the header,
    and the errors of loads() (R16, R23)."""

    def test_a_64mb_load_makes_one_copy(self, tmp_path: Path) -> None:
        import tracemalloc

        path = tmp_path / "big.bkf"
        f = BloomFilter(60_000_000, 0.01, seed=5)
        f.add_many(range(1000))
        f.save(path)
        nbytes = f.state_nbytes
        assert nbytes > 64 << 20
        del f
        gc.collect()
        tracemalloc.start()
        try:
            g = bloomkit.load(path)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        # the state itself is traced (PyMem_RawCalloc), so the peak proves
        # there was no second copy: read() into bytes, then a memcpy, was 2x
        assert nbytes <= peak <= nbytes + (2 << 20), (peak, nbytes)
        assert all(g.contains_many(range(1000)))
        assert g.to_bytes() == path.read_bytes()

    @pytest.mark.parametrize("kind_cls", ["bloom", "counting", "cuckoo", "scalable", "cms"])
    def test_every_kind_loads_as_its_class(self, kind_cls: str, tmp_path: Path) -> None:
        objs = {
            "bloom": lambda: BloomFilter(1000, 0.01),
            "counting": lambda: bloomkit.CountingBloomFilter(1000, 0.01),
            "cuckoo": lambda: bloomkit.CuckooFilter(1000, 0.01),
            "scalable": lambda: bloomkit.ScalableBloomFilter(initial_capacity=10),
            "cms": lambda: bloomkit.CountMinSketch(64, 4),
        }
        f = objs[kind_cls]()
        f.add_many(range(100))
        path = tmp_path / "x.bkf"
        f.save(path)
        g = bloomkit.load(path)
        assert type(g) is type(f) and g == f and not g.dirty and g.writable

    def test_errors_are_those_of_loads(self, rng: random.Random, tmp_path: Path) -> None:
        data = bytearray(_filled(BloomFilter).to_bytes())
        path = tmp_path / "c.bkf"
        cases = [bytes(data[:n]) for n in (0, 10, 63, 64, 100, len(data) - 1)]
        for _ in range(40):  # one flipped bit anywhere: header, params or payload
            d = bytearray(data)
            i, bit = DIRTY_BIT
            while (i, bit) == DIRTY_BIT:
                # but not DIRTY: a file marked open for writing names its
                # path and `bloomkit repair` (the next test), bytes cannot
                i, bit = rng.randrange(len(d)), rng.randrange(8)
            d[i] ^= 1 << bit
            cases.append(bytes(d))
        d = bytearray(data)
        d[12:14] = (99).to_bytes(2, "little")  # an unknown kind
        cases.append(bytes(d))
        for case in cases:
            path.write_bytes(case)
            with pytest.raises(Exception) as want:
                bloomkit.loads(case)
            with pytest.raises(Exception) as got:
                bloomkit.load(path)
            assert type(got.value) is type(want.value)
            assert isinstance(got.value, FormatError)
            assert str(got.value) == str(want.value)

    def test_a_dirty_file_is_unclean_and_names_the_path(self, tmp_path: Path) -> None:
        path = tmp_path / "d.bkf"
        data = bytearray(_filled(BloomFilter).to_bytes())
        bloomkit._core.set_dirty(data, True)
        path.write_bytes(bytes(data))
        with pytest.raises(UncleanFileError, match=r"d\.bkf: unclean"):
            bloomkit.load(path)


class OneLoaderTests:
    """loads() takes load()'s path: the header is parsed once in C and the
    kind picks the class once (_core.load_bytes); the DIRTY rule lives in
    the one validator, after the structure checks (issue #24)."""

    def test_loads_asks_the_registry_once_and_parses_no_header_in_python(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        f = _filled(BloomFilter)
        asked: list[int] = []
        real = persist.kinds.class_for_kind

        def class_for(kind: int) -> type:
            asked.append(kind)
            return real(kind)

        def no_peek(*args: object) -> None:
            raise AssertionError("loads() parsed the header in Python")

        monkeypatch.setattr(persist.kinds, "class_for_kind", class_for)
        monkeypatch.setattr(bloomkit._core, "peek_header", no_peek)
        g = bloomkit.loads(memoryview(f.to_bytes())[0:])
        assert asked == [BloomFilter._bk_kind]
        assert type(g) is BloomFilter and g == f and g.to_bytes() == f.to_bytes()

    def test_a_dirty_state_is_checked_for_corruption_first(self) -> None:
        data = bytearray(_filled(BloomFilter).to_bytes())
        bloomkit._core.set_dirty(data, True)
        with pytest.raises(UncleanFileError):
            bloomkit._core.validate(data)
        # num_hashes 0: an O(1) structure check fails, so the state is
        # corrupt, not merely unclean, for every caller of the validator
        data[64 + 8 : 64 + 12] = b"\0\0\0\0"
        with pytest.raises(FormatError) as err:
            bloomkit._core.validate(data)
        assert not isinstance(err.value, UncleanFileError)
        with pytest.raises(FormatError) as err:
            persist.checks.check_bytes(data, "x.bkf")
        assert not isinstance(err.value, UncleanFileError)


class KindListTests:
    """The list of kinds is written once: the format's table in C
    (bk_kinds.c, one descriptor per kind), exported as ``_core.KINDS``
    (issues #24, #30)."""

    def test_facades_and_registry_read_the_c_table(self) -> None:
        kinds = bloomkit._core.KINDS
        assert kinds["BloomFilter"].id == bloomkit.KIND_BLOOM == BloomFilter._bk_kind
        for name, kind in kinds.items():
            assert kind.name == name
            cls = getattr(bloomkit, name, None)
            if cls is None:  # a kind with its own reader (ParquetIndex)
                assert kind.id not in persist.kinds.KINDS
                continue
            assert persist.kinds.KINDS[kind.id] is cls
            assert cls._bk_kind == kind.id
        assert sorted(persist.kinds.KINDS) == sorted(
            k.id for n, k in kinds.items() if hasattr(bloomkit, n)
        )

    def test_ids_are_those_of_the_released_files(self) -> None:
        import json

        golden = Path(__file__).parent / "format" / "golden"
        seen = set()
        for manifest in golden.glob("*.json"):
            m = json.loads(manifest.read_text())
            data = manifest.with_suffix(".bkf").read_bytes()
            kind = bloomkit._core.peek_header(data)["kind"]
            assert bloomkit._core.KINDS[m["class"]].id == kind, manifest.name
            seen.add(m["class"])
        assert seen >= {"BloomFilter", "CuckooFilter", "ScalableBloomFilter"}
