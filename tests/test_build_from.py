"""bloomkit.build_from / bloomkit.sources and ``bloomkit build`` on data files
(issue #19): text lines, .npy (memory-mapped), Parquet and CSV columns
(pyarrow, streamed), many files and globs; the one key encoding on every
path (docs/keys.md); nulls skipped and counted; capacity from metadata.

R20 (bad input: a clear error, never a traceback) for the new inputs."""

from __future__ import annotations

import contextlib
import datetime
import gzip
import io
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import bloomkit
from bloomkit import (
    BlockedBloomFilter,
    BloomFilter,
    CountMinSketch,
    CuckooFilter,
    build_from,
    sources,
)
from bloomkit.cli import main

np = pytest.importorskip("numpy")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

SRC = str(Path(bloomkit.__file__).resolve().parents[1])
ENV = dict(os.environ, PYTHONPATH=SRC)


def run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "bloomkit", *map(str, args)],
                          capture_output=True, env=ENV, cwd=cwd, timeout=120)


def _ints(rng: random.Random, n: int) -> list[int]:
    """Distinct int64 values spread over the whole range, negatives included."""
    return list({rng.randrange(-2**63, 2**63) for _ in range(n)})


def _words(rng: random.Random, n: int) -> list[str]:
    alphabet = "abcdefghijklmnopqrstuvwxyzé€0123456789"
    return list({"".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 20)))
                 for _ in range(n)})


def _lines_file(path: Path, keys: list[str]) -> Path:
    path.write_bytes("".join(k + "\n" for k in keys).encode())
    return path


def _absent(f: Any, probes: list[Any]) -> int:
    return sum(1 for k in probes if k not in f)


# ---- Begin logic for .npy -------------------------------------------------------------


class NpyKeysTests:
    def test_int64_is_ints_by_value_like_add_many(self, tmp_path: Path,
                                                  rng: random.Random) -> None:
        keys = _ints(rng, 3000)
        arr = np.array(keys, dtype=np.int64)
        np.save(tmp_path / "k.npy", arr)
        f = build_from(tmp_path / "k.npy")
        ref = BlockedBloomFilter(len(keys))
        ref.add_many(arr)
        assert f.capacity == len(keys)  # from the shape: no counting pass
        assert f.to_bytes() == ref.to_bytes()
        assert _absent(f, keys) == 0  # Python ints answer

    def test_is_memory_mapped_not_loaded(self, tmp_path: Path) -> None:
        np.save(tmp_path / "k.npy", np.arange(200_000, dtype=np.int32))
        (src,) = sources.open_sources(tmp_path / "k.npy")
        first = next(src.batches()).keys
        assert isinstance(first, np.memmap) and len(first) == sources.BATCH_ROWS

    @pytest.mark.parametrize("dtype", ["u1", "i2", "<u4", ">i8", ">u8", "?"])
    def test_integer_and_bool_dtypes_give_the_python_ints(self, tmp_path: Path,
                                                          dtype: str) -> None:
        values = np.array([0, 1, 2, 100, 127], dtype="i8")
        if dtype == "?":
            values = values.astype(bool)
        elif dtype.endswith("u8"):
            values = np.array([0, 1, 2**63, 2**64 - 1], dtype="u8")
        np.save(tmp_path / "k.npy", values.astype(dtype))
        f = build_from(tmp_path / "k.npy", capacity=100)
        ref = BlockedBloomFilter(100)
        ref.add_many([int(v) for v in values])  # big-endian, bools: the ints of their values
        assert f.to_bytes() == ref.to_bytes()

    def test_bytes_and_unicode_arrays(self, tmp_path: Path, rng: random.Random) -> None:
        words = _words(rng, 500)
        np.save(tmp_path / "u.npy", np.array(words))  # U dtype: str keys
        np.save(tmp_path / "s.npy", np.array([w.encode() for w in words]))  # S: bytes keys
        lines = build_from(_lines_file(tmp_path / "k.txt", words))
        assert build_from(tmp_path / "u.npy").to_bytes() == lines.to_bytes()
        assert build_from(tmp_path / "s.npy").to_bytes() == lines.to_bytes()

    def test_structured_array_field(self, tmp_path: Path) -> None:
        arr = np.zeros(50, dtype=[("id", "<i8"), ("score", "<f8")])
        arr["id"] = np.arange(50) * 7
        np.save(tmp_path / "t.npy", arr)
        f = build_from(tmp_path / "t.npy", column="id")
        assert _absent(f, [i * 7 for i in range(50)]) == 0
        with pytest.raises(ValueError, match="pick a field"):
            build_from(tmp_path / "t.npy")
        with pytest.raises(TypeError, match=r"'score'.*float"):
            build_from(tmp_path / "t.npy", column="score")

    def test_refused_arrays_name_the_file_and_dtype(self, tmp_path: Path) -> None:
        np.save(tmp_path / "f.npy", np.array([1.5, 2.0]))
        np.save(tmp_path / "m.npy", np.zeros((3, 2), dtype=np.int64))
        np.save(tmp_path / "o.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
        np.save(tmp_path / "d.npy", np.array(["2024-01-01"], dtype="datetime64[D]"))
        (tmp_path / "bad.npy").write_bytes(b"\x93NUMPY not really")
        with pytest.raises(TypeError, match=r"f\.npy.*float64"):
            build_from(tmp_path / "f.npy")
        with pytest.raises(ValueError, match=r"m\.npy: a 2-d array"):
            build_from(tmp_path / "m.npy")
        with pytest.raises(ValueError, match=r"o\.npy: cannot read"):  # never unpickled
            build_from(tmp_path / "o.npy")
        with pytest.raises(TypeError, match=r"d\.npy.*datetime64"):
            build_from(tmp_path / "d.npy")
        with pytest.raises(ValueError, match=r"bad\.npy: cannot read"):
            build_from(tmp_path / "bad.npy")
        # numpy's own message for these would be about pickles
        (tmp_path / "text.npy").write_bytes(b"apple\npear\n")
        np.savez(tmp_path / "z.npz", a=np.arange(3))
        with pytest.raises(ValueError, match=r"text\.npy: not a \.npy file: no \.npy magic"):
            build_from(tmp_path / "text.npy")
        with pytest.raises(ValueError, match=r"z\.npz: not a \.npy file: a \.npz archive"):
            build_from(tmp_path / "z.npz", format="npy")

    def test_lying_or_broken_headers_are_a_clear_error(self, tmp_path: Path) -> None:
        """R20: a header claiming more elements than the file holds, or one
        numpy's parser chokes on (a TokenError, not a ValueError), is a
        ValueError naming the file, never a huge allocation or a traceback."""
        np.save(tmp_path / "k.npy", np.arange(4, dtype=np.int64))
        data = (tmp_path / "k.npy").read_bytes()
        assert b"'shape': (4,), }" in data
        for name, header in (("long.npy", b"'shape': (99999999999,)}"),
                             ("open.npy", b"'shape': (4,),  ")):
            (tmp_path / name).write_bytes(data.replace(b"'shape': (4,), }", header))
            with pytest.raises(ValueError, match=rf"{name}: cannot read \.npy"):
                build_from(tmp_path / name)

    def test_dates_with_key(self, tmp_path: Path) -> None:
        np.save(tmp_path / "d.npy", np.array(["2024-01-01", "2024-02-03"], dtype="datetime64[D]"))
        f = build_from(tmp_path / "d.npy", key=lambda d: d.isoformat())
        assert datetime.date(2024, 2, 3) in f and f.key is not None

    def test_empty_array(self, tmp_path: Path) -> None:
        np.save(tmp_path / "e.npy", np.zeros(0, dtype=np.int64))
        f = build_from(tmp_path / "e.npy")
        assert f.capacity == 1 and len(f) == 0


# ---- End logic for .npy ---------------------------------------------------------------

# ---- Begin logic for Parquet ----------------------------------------------------------


class ParquetKeysTests:
    def test_int64_column_answers_python_ints_and_skips_nulls(
            self, tmp_path: Path, rng: random.Random) -> None:
        keys = _ints(rng, 5000)
        column = [None if i % 10 == 0 else k for i, k in enumerate(keys)]
        pq.write_table(pa.table({"user_id": pa.array(column, pa.int64()),
                                 "other": pa.array([str(k) for k in keys])}),
                       tmp_path / "u.parquet", row_group_size=700)
        present = [k for k in column if k is not None]
        f = build_from(tmp_path / "u.parquet", column="user_id")
        # capacity: the rows less the nulls the column statistics count (free)
        assert f.capacity == len(present)
        assert _absent(f, present) == 0
        ref = BlockedBloomFilter(len(present))
        ref.add_many(np.array(present, dtype=np.int64))
        assert f.to_bytes() == ref.to_bytes()  # the same keys as a numpy build
        stats = sources.add_from(BlockedBloomFilter(len(keys)), tmp_path / "u.parquet",
                                 column="user_id")
        assert (stats.files, stats.rows, stats.keys, stats.nulls) == (
            1, len(keys), len(present), len(keys) - len(present))

    def test_string_column_equals_a_text_line_build(self, tmp_path: Path,
                                                    rng: random.Random) -> None:
        words = _words(rng, 2000)
        pq.write_table(pa.table({"w": words}), tmp_path / "w.parquet", row_group_size=300)
        pq.write_table(pa.table({"w": pa.array(words, pa.large_string())}),
                       tmp_path / "big.parquet")
        pq.write_table(pa.table({"w": pa.array(words).dictionary_encode()}),
                       tmp_path / "dict.parquet")
        lines = build_from(_lines_file(tmp_path / "w.txt", words))
        for name in ("w.parquet", "big.parquet", "dict.parquet"):
            f = build_from(tmp_path / name)  # one column: no column= needed
            assert f.to_bytes() == lines.to_bytes(), name
            assert _absent(f, words) == 0  # Python strs answer

    def test_binary_and_bool_columns(self, tmp_path: Path) -> None:
        table = pa.table({"b": pa.array([b"\x00\x01", b"abc", None, b"abc\x00"]),
                          "flag": pa.array([True, False, None, True])})
        pq.write_table(table, tmp_path / "t.parquet")
        f = build_from(tmp_path / "t.parquet", column="b", capacity=10)
        ref = BlockedBloomFilter(10)
        ref.add_many([b"\x00\x01", b"abc", b"abc\x00"])  # trailing NULs kept: the raw bytes
        assert f.to_bytes() == ref.to_bytes()
        g = build_from(tmp_path / "t.parquet", column="flag", capacity=10)
        ref = BlockedBloomFilter(10)
        ref.add_many([1, 0, 1])  # bools are the ints 0/1
        assert g.to_bytes() == ref.to_bytes() and 1 in g and True in g

    def test_fixed_size_binary_keeps_trailing_nuls(self, tmp_path: Path) -> None:
        values = [b"ab\x00", b"xyz", None, b"\x00\x00\x00"]
        pq.write_table(pa.table({"h": pa.array(values, pa.binary(3))}), tmp_path / "h.parquet")
        f = build_from(tmp_path / "h.parquet", capacity=10)
        ref = BlockedBloomFilter(10)
        ref.add_many([v for v in values if v is not None])
        assert f.to_bytes() == ref.to_bytes() and b"ab\x00" in f and b"ab" not in f

    def test_refused_columns_name_the_column_and_type(self, tmp_path: Path) -> None:
        table = pa.table({
            "score": pa.array([1.5, 2.5]),
            "price": pa.array([1, 2], pa.decimal128(10, 2)),
            "ts": pa.array([datetime.datetime(2024, 1, 1), datetime.datetime(2024, 1, 2)]),
            "tags": pa.array([[1], [2, 3]]),
        })
        pq.write_table(table, tmp_path / "t.parquet")
        for col, pattern in (("score", "'score' is double: floats are not keys"),
                             ("price", "'price' is decimal128.*floats"),
                             ("ts", "'ts' is timestamp.*dates and times"),
                             ("tags", "'tags' is list.*not a key type")):
            with pytest.raises(TypeError, match=pattern):
                build_from(tmp_path / "t.parquet", column=col)
        f = build_from(tmp_path / "t.parquet", column="ts", key=lambda d: d.isoformat())
        assert datetime.datetime(2024, 1, 2) in f

    def test_column_errors_list_the_columns(self, tmp_path: Path) -> None:
        pq.write_table(pa.table({"a": [1], "b": [2]}), tmp_path / "t.parquet")
        with pytest.raises(ValueError, match=r"t\.parquet: 2 columns.*\(a, b\)"):
            build_from(tmp_path / "t.parquet")
        with pytest.raises(ValueError, match=r"no column 'c' \(columns: a, b\)"):
            build_from(tmp_path / "t.parquet", column="c")
        (tmp_path / "bad.parquet").write_bytes(b"PAR1 not parquet")
        with pytest.raises(ValueError, match=r"bad\.parquet: cannot read Parquet"):
            build_from(tmp_path / "bad.parquet")

    def test_streamed_in_batches(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(sources.base, "BATCH_ROWS", 100)
        pq.write_table(pa.table({"k": pa.array(range(1000), pa.int64())}),
                       tmp_path / "k.parquet", row_group_size=250)
        (src,) = sources.open_sources(tmp_path / "k.parquet")
        sizes = [b.rows for b in src.batches()]
        assert max(sizes) <= 100 and sum(sizes) == 1000
        f = build_from(tmp_path / "k.parquet")
        assert _absent(f, list(range(1000))) == 0

    def test_all_null_column(self, tmp_path: Path) -> None:
        pq.write_table(pa.table({"k": pa.array([None, None], pa.null())}), tmp_path / "n.parquet")
        stats = sources.add_from(BloomFilter(10), tmp_path / "n.parquet")
        assert (stats.keys, stats.nulls) == (0, 2)


class _Recorder:
    def __init__(self) -> None:
        self.seen: list[int] = []

    def add_many(self, batch: Any) -> None:
        self.seen.append(len(batch))


class ReadAheadTests:
    """Parquet and CSV batches are decoded in a reader thread, READ_AHEAD
    batches ahead of the adds (sources._read_ahead): the same keys in the
    same order, errors raised in the caller, no reader left behind."""

    def _file(self, tmp_path: Path, rng: random.Random, fmt: str) -> tuple[Path, list[int]]:
        keys = _ints(rng, 5000)
        table = pa.table({"k": pa.array(keys, pa.int64()), "s": pa.array(map(str, keys))})
        if fmt == "parquet":
            pq.write_table(table, tmp_path / "k.parquet", row_group_size=700)
            return tmp_path / "k.parquet", keys
        import pyarrow.csv as pcsv

        pcsv.write_csv(table, tmp_path / "k.csv")
        return tmp_path / "k.csv", keys

    @pytest.mark.parametrize("fmt", ["parquet", "csv"])
    def test_same_batches_in_the_same_order(self, tmp_path: Path, rng: random.Random,
                                            monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
        monkeypatch.setattr(sources.base, "BATCH_ROWS", 300)
        path, keys = self._file(tmp_path, rng, fmt)
        for column in ("k", "s"):
            (src,) = sources.open_sources(path, column=column)
            assert src.read_ahead
            serial = [(b.rows, b.nulls, b.position, list(b.keys)) for b in src.batches()]
            ahead = [(b.rows, b.nulls, b.position, list(b.keys))
                     for b in sources._read_ahead(src)]
            assert ahead == serial and len(serial) > 10
            rec = _Recorder()
            stats = sources.add_from(rec, path, column=column)
            assert rec.seen == [r[0] - r[1] for r in serial if r[0] > r[1]]
            assert stats.keys == len(keys)
        f = build_from(path, column="k")
        g = BlockedBloomFilter(len(keys))
        g.add_many(keys)
        assert f == g

    def test_an_add_that_raises_stops_the_reader(self, tmp_path: Path, rng: random.Random,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
        import threading

        monkeypatch.setattr(sources.base, "BATCH_ROWS", 100)
        path, _ = self._file(tmp_path, rng, "parquet")

        class Boom:
            calls = 0

            def add_many(self, batch: Any) -> None:
                Boom.calls += 1
                if Boom.calls == 3:
                    raise RuntimeError("boom")

        with pytest.raises(RuntimeError, match="boom"):
            sources.add_from(Boom(), path, column="k")
        assert Boom.calls == 3
        assert [t for t in threading.enumerate() if t.name.startswith("bloomkit-read")] == []

    def test_a_read_error_is_raised_in_the_caller(self, tmp_path: Path, rng: random.Random,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(sources.base, "BATCH_ROWS", 100)
        path, _ = self._file(tmp_path, rng, "parquet")
        (src,) = sources.open_sources(path, column="k")
        real = src.batches

        def failing(counting: bool = False) -> Any:
            for i, b in enumerate(real(counting)):
                if i == 4:
                    raise ValueError(f"{src.name}: cannot read Parquet: injected")
                yield b

        monkeypatch.setattr(src, "batches", failing)
        got = []
        with pytest.raises(ValueError, match="cannot read Parquet: injected"):
            for b in sources._read_ahead(src):
                got.append(b.rows)
        assert got == [100] * 4


# ---- End logic for Parquet ------------------------------------------------------------

# ---- Begin logic for CSV --------------------------------------------------------------


class CsvKeysTests:
    def test_inferred_int_and_string_columns(self, tmp_path: Path,
                                             rng: random.Random) -> None:
        ids = _ints(rng, 800)
        words = _words(rng, 800)[: len(ids)]
        ids = ids[: len(words)]
        body = "".join(f"{i},{w}\n" for i, w in zip(ids, words, strict=True))
        (tmp_path / "t.csv").write_text("id,word\n" + body + ",\n", encoding="utf-8")
        f = build_from(tmp_path / "t.csv", column="id")
        assert f.capacity == len(ids)  # a counting pass: the empty cell is null
        assert _absent(f, ids) == 0
        g = build_from(tmp_path / "t.csv", column="word")
        assert g.to_bytes() == build_from(_lines_file(tmp_path / "w.txt", words)).to_bytes()

    def test_string_column_in_slices(self, tmp_path: Path, rng: random.Random,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
        """A CSV block is cut into slices of BATCH_ROWS: Arrow slices whose
        offsets start past 0, read in place by ByteKeys."""
        monkeypatch.setattr(sources.base, "BATCH_ROWS", 7)
        words = [w for w in _words(rng, 300) if not w[0].isdigit()]
        (tmp_path / "w.csv").write_text("w\n" + "".join(f"{w}\n" for w in words) + "\n",
                                        encoding="utf-8")
        f = build_from(tmp_path / "w.csv")
        assert f.to_bytes() == build_from(_lines_file(tmp_path / "w.txt", words)).to_bytes()

    def test_as_text_keeps_leading_zeros_and_na_is_a_key(self, tmp_path: Path) -> None:
        (tmp_path / "z.csv").write_text("zip,country\n007,NA\n,null\n12,FR\n")
        f = build_from(tmp_path / "z.csv", column="zip", as_text=True)
        assert "007" in f and "12" in f and len(f) == 2
        g = build_from(tmp_path / "z.csv", column="zip")  # inferred int64: 7 and 12
        assert 7 in g and 12 in g
        h = build_from(tmp_path / "z.csv", column="country", capacity=10)
        ref = BlockedBloomFilter(10)
        ref.add_many(["NA", "null", "FR"])  # only an empty cell is null
        assert h.to_bytes() == ref.to_bytes()

    def test_tsv_gzip_and_delimiter(self, tmp_path: Path) -> None:
        (tmp_path / "t.tsv").write_text("a\tb\nx\t1\ny\t2\n")
        with gzip.open(tmp_path / "t.csv.gz", "wt") as fh:
            fh.write("a;b\nx;1\ny;2\n")
        f = build_from(tmp_path / "t.tsv", column="a")
        g = build_from(tmp_path / "t.csv.gz", column="a", delimiter=";")
        assert f.to_bytes() == g.to_bytes() and "x" in f and "y" in f

    def test_a_later_block_of_another_type_is_a_clear_error(
            self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(sources.CsvSource, "BLOCK", 64)
        (tmp_path / "t.csv").write_text("id\n" + "".join(f"{i}\n" for i in range(100)) + "abc\n")
        with pytest.raises(ValueError, match=r"t\.csv: cannot read CSV.*inferred.*as_text"):
            build_from(tmp_path / "t.csv", capacity=200)
        f = build_from(tmp_path / "t.csv", as_text=True)
        assert "abc" in f and "99" in f

    @pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
    def test_no_file_is_closed_under_the_readers_read_ahead(
            self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """pyarrow's CSV reader reads blocks ahead on its I/O threads: a file
        we closed under it let a pending read land on the next file opened
        with the same descriptor number (CI lost the header of the CSV's
        next open, one run in thousands).  So the source never closes a
        file it gave a reader, on success, on a bad block or when left
        early, and the last owner's close still leaves no descriptor behind."""
        import pyarrow.csv as pcsv
        closed: list[Any] = []
        read: list[Any] = []

        class Tracked(pa.OSFile):  # type: ignore[misc, name-defined]
            def close(self) -> None:
                closed.append(self)
                super().close()

        def open_csv(stream: Any, *args: Any, **kw: Any) -> Any:
            read.append(stream)
            return real_open_csv(stream, *args, **kw)

        real_open_csv = pcsv.open_csv
        monkeypatch.setattr(pa, "OSFile", Tracked)
        monkeypatch.setattr(pcsv, "open_csv", open_csv)
        monkeypatch.setattr(sources.CsvSource, "BLOCK", 64)
        path = tmp_path / "t.csv"
        path.write_text("id\n" + "".join(f"{i}\n" for i in range(1000)) + "abc\n")
        with pytest.raises(ValueError, match="inferred"):
            build_from(path, capacity=2000)
        f = build_from(path, as_text=True)
        assert "abc" in f and "999" in f
        src = sources.open_sources(path, as_text=True)[0]
        gen: Any = src.batches()
        next(gen)
        gen.close()  # left early
        assert sum(isinstance(r, Tracked) for r in read) >= 3
        assert not any(c is r for c in closed for r in read)
        read.clear()  # the test's own references

        def held() -> int:
            return sum(os.path.realpath(f"/proc/self/fd/{fd}") == str(path.resolve())
                       for fd in os.listdir("/proc/self/fd")
                       if os.path.exists(f"/proc/self/fd/{fd}"))
        deadline = time.monotonic() + 10
        while held() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert held() == 0

    @pytest.mark.parametrize("text", [
        "id,name\n" + "".join(f"{i},n{i}\n" for i in range(40)) + "x,y\n",  # ints, then text
        "id,name\r\n" + "".join(f"{i},n{i}\r\n" for i in range(40)),     # CRLF
        "id,name\r" + "".join(f"{i},n{i}\r" for i in range(40)),           # CR only
        "id,name\n1,a\n2,b",                                               # no last line end
        "id," + "n" * 100 + "\n1,a\n2,b\n",                                # a header past a block
    ])
    @pytest.mark.parametrize("suffix", [".csv", ".csv.gz"])
    def test_the_first_look_sees_what_the_reader_sees(
            self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, suffix: str) -> None:
        """The columns and the type are read from the first block's whole
        lines, parsed from memory (CsvSource._head); they must be what
        pyarrow's own reader of the file infers, line ends and
        compression whatever they are."""
        import pyarrow.csv as pcsv
        monkeypatch.setattr(sources.CsvSource, "BLOCK", 64)
        path = tmp_path / f"t{suffix}"
        data = text.encode()
        path.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
        try:
            want = pcsv.open_csv(
                pa.BufferReader(data), read_options=pcsv.ReadOptions(block_size=64),
                convert_options=pcsv.ConvertOptions(include_columns=["id"]))
        except pa.ArrowInvalid as exc:  # a header past a block
            assert "cannot infer number of columns" in str(exc)
            with pytest.raises(ValueError, match=r"t\.csv(\.gz)?: cannot read CSV: no line end "
                               r"in its first 64 bytes \(not text, or a header line longer"):
                sources.open_sources(path, column="id")
            return
        src = sources.open_sources(path, column="id")[0]
        assert isinstance(src, sources.CsvSource)
        assert src.describe() == f"column 'id': {want.schema.field('id').type}"

    def test_float_column_refused(self, tmp_path: Path) -> None:
        (tmp_path / "t.csv").write_text("x\n1.5\n2\n")
        with pytest.raises(TypeError, match=r"t\.csv: column 'x' is double"):
            build_from(tmp_path / "t.csv")


# ---- End logic for CSV ----------------------------------------------------------------

# ---- Begin logic for many files, globs, kinds, missing pyarrow --------------------------


class ManyFilesTests:
    def test_a_glob_equals_one_build_of_all_keys(self, tmp_path: Path,
                                                 rng: random.Random) -> None:
        keys = _ints(rng, 3000)
        parts = [keys[:1000], keys[1000:2500], keys[2500:]]
        for i, part in enumerate(parts):
            pq.write_table(pa.table({"id": pa.array([*part, None], pa.int64())}),
                           tmp_path / f"p{i}.parquet")
        np.save(tmp_path / "p9.npy", np.array(keys[:10], dtype=np.int64))
        f = build_from(str(tmp_path / "p*.parquet"), column="id")
        assert f.capacity == len(keys)  # the sum of the files' metadata
        ref = BlockedBloomFilter(len(keys))
        ref.add_many(keys)
        assert f.to_bytes() == ref.to_bytes()
        # a list of files of several formats; column= applies where there are columns
        g = build_from([str(tmp_path / "p*.parquet"), tmp_path / "p9.npy"], column="id")
        assert g.capacity == len(keys) + 10 and _absent(g, keys) == 0

    @pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
    def test_many_files_hold_no_descriptors(self, tmp_path: Path) -> None:
        """Every file is checked up front, but one is open at a time: a glob
        of thousands of files must not run out of descriptors."""
        for i in range(40):
            np.save(tmp_path / f"k{i:02}.npy", np.arange(i * 10, i * 10 + 10, dtype=np.int64))
            pq.write_table(pa.table({"k": pa.array(range(i * 10, i * 10 + 10))}),
                           tmp_path / f"k{i:02}.parquet")
            (tmp_path / f"k{i:02}.csv").write_text("k\n" + "".join(
                f"{j}\n" for j in range(i * 10, i * 10 + 10)))
        before = len(os.listdir("/proc/self/fd"))
        srcs = sources.open_sources(str(tmp_path / "k*"))
        assert len(srcs) == 120
        assert len(os.listdir("/proc/self/fd")) - before < 5
        f = BlockedBloomFilter(400)
        sources.feed(f, srcs)
        assert _absent(f, list(range(400))) == 0

    def test_missing_files_and_directories(self, tmp_path: Path) -> None:
        with pytest.raises(FileNotFoundError, match=r"nothing\*\.parquet: no file matches"):
            build_from(str(tmp_path / "nothing*.parquet"))
        with pytest.raises(FileNotFoundError):
            build_from(tmp_path / "missing.txt")
        with pytest.raises(IsADirectoryError):
            build_from(tmp_path)
        with pytest.raises(ValueError, match="no input files"):
            build_from([])
        with pytest.raises(ValueError, match="format must be one of"):
            build_from(_lines_file(tmp_path / "k.txt", ["a"]), format="xlsx")

    def test_options_no_file_uses_are_refused(self, tmp_path: Path) -> None:
        keys = _lines_file(tmp_path / "k.txt", ["a", "b"])
        with pytest.raises(ValueError, match="column= / --column applies"):
            build_from(keys, column="x")
        with pytest.raises(ValueError, match="apply to CSV"):
            build_from(keys, as_text=True)

    def test_format_override(self, tmp_path: Path) -> None:
        pq.write_table(pa.table({"k": ["a", "b"]}), tmp_path / "data.bin")
        f = build_from(tmp_path / "data.bin", format="parquet")
        assert "a" in f and "b" in f and f.capacity == 2

    def test_other_kinds(self, tmp_path: Path) -> None:
        np.save(tmp_path / "k.npy", np.arange(500, dtype=np.int64))
        c = build_from(tmp_path / "k.npy", CuckooFilter, error_rate=0.001)
        assert isinstance(c, CuckooFilter) and _absent(c, list(range(500))) == 0
        s = build_from(tmp_path / "k.npy", CountMinSketch, width=1000, depth=4)
        assert s.estimate(7) >= 1
        with pytest.raises(TypeError, match="takes no capacity"):
            build_from(tmp_path / "k.npy", CountMinSketch, capacity=10, width=10, depth=2)

    def test_progress_sees_rows_and_bytes(self, tmp_path: Path) -> None:
        np.save(tmp_path / "k.npy", np.arange(200_000, dtype=np.int64))
        seen: list[tuple[int, int]] = []
        build_from(tmp_path / "k.npy", progress=lambda s: seen.append((s.keys, s.bytes)))
        assert len(seen) > 1 and seen == sorted(seen)
        assert seen[-1] == (200_000, os.path.getsize(tmp_path / "k.npy"))

    def test_without_pyarrow_the_error_names_the_extra(
            self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        pq.write_table(pa.table({"k": [1]}), tmp_path / "k.parquet")
        for name in [m for m in sys.modules if m == "pyarrow" or m.startswith("pyarrow.")]:
            monkeypatch.setitem(sys.modules, name, None)  # import pyarrow now fails
        with pytest.raises(ImportError, match=r"pip install 'bloomkit\[arrow\]'"):
            build_from(tmp_path / "k.parquet")
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = main(["build", str(tmp_path / "k.parquet"), "-o", str(tmp_path / "o.bkf")])
        assert code == 2
        assert err.getvalue().count("\n") == 1 and "bloomkit[arrow]" in err.getvalue()


# ---- End logic for many files ---------------------------------------------------------

# ---- Begin logic for the command line -------------------------------------------------


class CliBuildFromFilesTests:
    def test_parquet_glob_with_nulls(self, tmp_path: Path, rng: random.Random) -> None:
        keys = _ints(rng, 2000)
        for i in range(2):
            part = keys[i * 1000:(i + 1) * 1000]
            pq.write_table(pa.table({"user_id": pa.array([*part, None, None], pa.int64()),
                                     "name": [str(k) for k in part] + ["x", "y"]}),
                           tmp_path / f"day{i}.parquet")
        out = tmp_path / "f.bkf"
        r = run("build", "day*.parquet", "--column", "user_id", "-o", out, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        line = r.stdout.decode()
        assert line.count("\n") == 1
        for part in ("2,000 keys", "column 'user_id': int64", "2 files", "2,004 rows",
                     "4 nulls skipped"):
            assert part in line, line
        f = bloomkit.load(out)
        assert f.capacity == 2000 and _absent(f, keys) == 0

    def test_string_column_file_equals_text_line_file(self, tmp_path: Path,
                                                      rng: random.Random) -> None:
        words = _words(rng, 1000)
        pq.write_table(pa.table({"w": words, "n": list(range(len(words)))}),
                       tmp_path / "w.parquet")
        (tmp_path / "w.csv").write_text("n,w\n" + "".join(
            f"{i},{w}\n" for i, w in enumerate(words)), encoding="utf-8")
        _lines_file(tmp_path / "w.txt", words)
        for args in (["w.txt"], ["w.parquet", "--column", "w"], ["w.csv", "--column", "w"]):
            r = run("build", *args, "-o", args[0] + ".bkf", "-q", cwd=tmp_path)
            assert r.returncode == 0 and r.stdout == b"", r.stderr
        text = (tmp_path / "w.txt.bkf").read_bytes()
        assert (tmp_path / "w.parquet.bkf").read_bytes() == text
        assert (tmp_path / "w.csv.bkf").read_bytes() == text
        r = run("query", "w.parquet.bkf", words[0], words[-1], cwd=tmp_path)
        assert r.returncode == 0  # command-line keys are strs: they match a string column

    @pytest.mark.parametrize("argv, message", [
        (["t.parquet"], "t.parquet: 2 columns: pick one with column= / --column (x, s)"),
        (["t.parquet", "--column", "x"], "t.parquet: column 'x' is double"),
        (["t.parquet", "--column", "nope"], "no column 'nope' (columns: x, s)"),
        (["none*.npy"], "none*.npy: no file matches"),
        (["t.parquet", "--column", "s", "--as-text"], "apply to CSV files"),
        (["t.parquet", "--column", "s", "--format", "npy"], "t.parquet: not a .npy file"),
    ])
    def test_errors_are_one_line(self, tmp_path: Path, argv: list[str], message: str) -> None:
        pq.write_table(pa.table({"x": [1.5], "s": ["a"]}), tmp_path / "t.parquet")
        r = run("build", *argv, "-o", "o.bkf", cwd=tmp_path)
        err = r.stderr.decode()
        assert r.returncode == 2 and err.count("\n") == 1 and "Traceback" not in err
        assert message in err, err
        assert not (tmp_path / "o.bkf").exists()

    def test_stdin_and_npy_together(self, tmp_path: Path) -> None:
        np.save(tmp_path / "k.npy", np.array([b"a", b"b"]))
        r = subprocess.run([sys.executable, "-m", "bloomkit", "build", "-", "k.npy",
                            "-o", "o.bkf"], input=b"c\nd\n", capture_output=True, env=ENV,
                           cwd=tmp_path, timeout=120)
        assert r.returncode == 0, r.stderr
        assert b"4 keys" in r.stdout and b".npy |S1" in r.stdout
        f = bloomkit.load(tmp_path / "o.bkf")
        assert all(k in f for k in "abcd") and f.capacity == 4


# ---- End logic for the command line ---------------------------------------------------
