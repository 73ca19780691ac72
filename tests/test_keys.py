"""The one key encoding (docs/keys.md): which keys are equal, which differ."""

from __future__ import annotations

import array
import os
import subprocess
import sys
from pathlib import Path

import pytest

import bloomkit
from bloomkit import BlockedBloomFilter, BloomFilter, _core

np = pytest.importorskip("numpy")

INT_DOMAIN = 0x696E74656765722E


class EncodingTests:
    def test_str_is_utf8_bytes(self) -> None:
        for s in ["", "abc", "héllo", "日本語", "emoji 🎉", "a" * 1000]:
            assert _core.key_hash(s) == _core.key_hash(s.encode("utf-8"))
            assert _core.key_hash(s) == _core.xxh3_64(s.encode("utf-8"), 0)

    def test_bytes_like_are_raw_bytes(self) -> None:
        b = b"some bytes\x00\xff"
        expect = _core.key_hash(b)
        assert _core.key_hash(bytearray(b)) == expect
        assert _core.key_hash(memoryview(b)) == expect
        assert _core.key_hash(array.array("B", b)) == expect

    def test_ints_in_their_own_domain(self) -> None:
        for v in [0, 1, -1, 2**63 - 1, -(2**63)]:
            expect = _core.xxh3_64((v % 2**64).to_bytes(8, "little"), INT_DOMAIN)
            assert _core.key_hash(v) == expect
        assert _core.key_hash(1) != _core.key_hash("1")
        assert _core.key_hash(1) != _core.key_hash(b"\x01")
        assert _core.key_hash(1) != _core.key_hash((1).to_bytes(8, "little"))

    def test_bool_and_numpy_ints_equal_python_ints(self) -> None:
        assert _core.key_hash(True) == _core.key_hash(1)
        assert _core.key_hash(False) == _core.key_hash(0)
        for dt in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64):
            assert _core.key_hash(dt(7)) == _core.key_hash(7)
        # R34: numpy.bool_ has no __index__, yet it is the int of an array's element
        assert _core.key_hash(np.True_) == _core.key_hash(1)
        assert _core.key_hash(np.False_) == _core.key_hash(0)

    def test_big_ints(self) -> None:
        for v in [2**63, 2**64 - 1, 2**64, -(2**63) - 1, 10**40, -(10**40)]:
            n = max(9, (v.bit_length() + 8) // 8)
            expect = _core.xxh3_64(v.to_bytes(n, "little", signed=True), INT_DOMAIN)
            assert _core.key_hash(v) == expect
        assert _core.key_hash(np.uint64(2**64 - 1)) == _core.key_hash(2**64 - 1)

    def test_seed_changes_hash(self) -> None:
        assert _core.key_hash("k", 0) != _core.key_hash("k", 1)

    def test_unsupported_types_say_what_is_supported(self) -> None:
        for bad in [1.5, None, object(), ("a",), ["a"], {"a": 1}, 1j, np.float64(1.0)]:
            with pytest.raises(TypeError, match=r"str, bytes-like .* or int"):
                _core.key_hash(bad)

    def test_lone_surrogate_is_an_error(self) -> None:
        with pytest.raises(UnicodeEncodeError):
            _core.key_hash("\ud800")


class FilterKeyTests:
    @pytest.mark.parametrize("cls", [BloomFilter, BlockedBloomFilter])
    def test_filters_follow_the_encoding(self, cls: type[BloomFilter]) -> None:
        f = cls(1000, 0.001)
        f.add("abc")
        assert b"abc" in f and bytearray(b"abc") in f and memoryview(b"abc") in f
        f.add(1)
        assert True in f and np.int64(1) in f and np.uint8(1) in f
        # "1" and b"\x01" are other keys (deterministic: the hash is fixed)
        assert "1" not in f and b"\x01" not in f

    @pytest.mark.parametrize("cls", [BloomFilter, BlockedBloomFilter])
    def test_key_callable(self, cls: type[BloomFilter]) -> None:
        f = cls(1000, 0.01, key=lambda t: f"{t[0]}:{t[1]}")
        f.add(("a", 1))
        assert ("a", 1) in f
        g = cls(1000, 0.01)
        g.add("a:1")
        assert g.to_bytes()[128:] == f.to_bytes()[128:]
        with pytest.raises(TypeError):
            cls(10, 0.1, key=5)  # type: ignore[arg-type]

    @pytest.mark.parametrize("cls", [BloomFilter, BlockedBloomFilter])
    def test_batch_and_scalar_paths_set_identical_bits(self, cls: type[BloomFilter]) -> None:
        ints = [*range(-5000, 5000), 2**63 - 1, -(2**63)]
        a = cls(20000, 0.01)
        for v in ints:
            a.add(v)
        b = cls(20000, 0.01)
        b.add_many(np.array(ints, dtype=np.int64))
        c = cls(20000, 0.01)
        c.add_many(iter(ints))
        d = cls(20000, 0.01)
        d.update(tuple(ints))
        assert a == b == c == d
        u = [2**64 - 1, 2**63, 0, 5]
        e = cls(100, 0.01)
        e.add_many(np.array(u, dtype=np.uint64))
        g = cls(100, 0.01)
        g.add_many(u)
        assert e == g
        words = [b"alpha", b"beta", b"gamma\x00x"]
        h = cls(100, 0.01)
        h.add_many(np.array(words, dtype="S8"))
        i = cls(100, 0.01)
        i.add_many(words)
        assert h == i
        j = cls(100, 0.01)
        j.add_many(array.array("q", [1, 2, 3]))
        k = cls(100, 0.01)
        k.add_many([1, 2, 3])
        assert j == k

    def test_batch_rejects_a_single_key_and_bad_arrays(self) -> None:
        f = BloomFilter(100, 0.01)
        for single in ["abc", b"abc", bytearray(b"abc")]:
            with pytest.raises(TypeError, match="single"):
                f.add_many(single)
        with pytest.raises(TypeError, match="1-d"):
            f.add_many(np.zeros((2, 2), dtype=np.int64))
        with pytest.raises(TypeError, match="1-d"):
            f.add_many(np.zeros(3, dtype=np.float64))
        with pytest.raises(TypeError):
            f.add_many(["ok", 1.5])

    def test_contains_many_result_types(self) -> None:
        f = BlockedBloomFilter(100, 0.01)
        f.add_many([1, 2, 3])
        assert f.contains_many([1, 2, 99999])[:2] == [True, True]
        r = f.contains_many(np.array([1, 2, 3], dtype=np.int64))
        assert r.dtype == np.bool_ and r.tolist() == [True, True, True]
        assert f.contains_many(np.array([1, 2, 3])[::2]).tolist() == [True, True]
        assert f.contains_many(iter([1, 2])) == [True, True]
        assert f.contains_many([]) == []


SCRIPT = """
import sys
sys.path[:0] = [{src!r}]
import bloomkit
out = []
for cls in (bloomkit.BloomFilter, bloomkit.BlockedBloomFilter):
    f = cls(5000, 0.01, seed=42)
    f.add_many(["k%d" % i for i in range(3000)])
    f.add_many(range(3000))
    f.add(b"raw")
    f.add(2**70)
    out.append(f.to_bytes().hex())
sys.stdout.write("\\n".join(out))
"""


def test_same_bytes_in_every_process() -> None:
    """R11: PYTHONHASHSEED never leaks into a filter."""
    src = str(Path(bloomkit.__file__).resolve().parent.parent)
    results = []
    for hashseed in ["0", "1", "random", "12345"]:
        env = dict(os.environ, PYTHONHASHSEED=hashseed)
        proc = subprocess.run(
            [sys.executable, "-c", SCRIPT.format(src=src)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        results.append(proc.stdout)
    assert len(set(results)) == 1


EMPTY_ITER_SCRIPT = """
import sys
sys.path[:0] = [{src!r}, {tests!r}]
import kind_list
cases, _ = kind_list.cases("arrow")
for name, case in sorted(cases.items()):
    obj = case.make()
    for empty in (iter([]), (k for k in ())):
        got = case.query(obj, empty)
        assert len(got) == 0, (name, got)
    got = case.query(obj, iter([b"k"]))
    assert len(got) == 1, (name, got)
    print(name)
"""


def test_an_empty_iterator_has_no_answers() -> None:
    """contains_many / estimate_many of an iterator that yields no key give
    no answers, in every kind.  The batch loop used to size an iterator's
    answers at one before its first key: an empty one gave a list of one
    uninitialised entry (a crash), so this runs in a child."""
    src = str(Path(bloomkit.__file__).resolve().parent.parent)
    proc = subprocess.run(
        [sys.executable, "-c", EMPTY_ITER_SCRIPT.format(src=src, tests=str(Path(__file__).parent))],
        capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "BlockedBloomFilter" in proc.stdout.split()
