"""Every state records the key domains it was ever given (issue #31 item 1;
docs/keys.md "Key domains", docs/FORMAT.md flag bits 8-11).

``obj.key_types`` is a frozenset of "int" and "text" (str and bytes-like
keys: one hash domain), or None for a state that does not record them.
The record is a superset: set by every add path (per key, list, iterator,
numpy, Arrow, ByteKeys, key=), ORed by unions, kept by copies, saves, maps,
growth and rebuilds; never set by a query.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import bloomkit
import kind_list
from bloomkit import _core
from key_domains import without_key_domains


def _adds(k: Any) -> bool:
    """A kind that adds keys one by one (not built once, not a TinyLFU's record)."""
    return not k.static and hasattr(getattr(bloomkit, k.name), "add")


def _makers() -> dict[str, Any]:
    """A small instance of every kind that adds, from its recipe's numpy case
    (tests/kind_list.py): no list of kinds here."""
    return {name: r.numpy.make for name, r in kind_list.recipes().items()
            if name in _core.KINDS and _adds(_core.KINDS[name])
            and isinstance(r.numpy, kind_list.NumpyCase)}


MAKERS = _makers()


def test_every_kind_that_adds_has_a_maker() -> None:
    kind_list.assert_covers(MAKERS, where=_adds)


def _batches() -> list[tuple[str, Any, set[str]]]:
    pa = pytest.importorskip("pyarrow")
    return [
        ("list of int", [1, 2, 2**70], {"int"}),
        ("list of str", ["a", "b"], {"text"}),
        ("tuple of bytes", (b"a", bytearray(b"b")), {"text"}),
        ("iterator", iter([1, "x"]), {"int", "text"}),
        ("numpy int64", np.arange(100, dtype=np.int64), {"int"}),
        ("numpy uint8", np.arange(10, dtype=np.uint8), {"int"}),
        ("numpy bool", np.array([True, False]), {"int"}),
        ("numpy S", np.array([b"ab", b"cd"]), {"text"}),
        ("arrow int", pa.array([1, None, 3]), {"int"}),
        ("arrow str", pa.array(["a", None]), {"text"}),
        ("arrow dict", pa.array(["a", "b", "a"]).dictionary_encode(), {"text"}),
        ("ByteKeys", _core.ByteKeys(np.array([0, 2, 4], dtype=np.int32), b"abcd"), {"text"}),
        ("empty", [], set()),
    ]


@pytest.mark.parametrize("name", sorted(MAKERS))
class EveryKindTests:
    def test_per_key_adds(self, name: str) -> None:
        f = MAKERS[name]()
        assert f.key_types == frozenset()  # recorded, nothing yet
        f.add(5)
        assert f.key_types == {"int"}
        f.add(np.int32(6))
        f.add(True)
        assert f.key_types == {"int"}
        f.add("x")
        assert f.key_types == {"int", "text"}
        g = MAKERS[name]()
        g.add(b"raw")
        g.add(memoryview(b"view"))
        assert g.key_types == {"text"}

    def test_batches(self, name: str) -> None:
        for label, keys, want in _batches():
            f = MAKERS[name]()
            f.add_many(keys)
            assert f.key_types == want, label

    def test_queries_record_nothing(self, name: str, tmp_path: Path) -> None:
        f = MAKERS[name]()
        f.add("x")
        assert 5 not in f or True  # a lookup of an int: no int recorded after it
        if hasattr(f, "contains_many"):
            f.contains_many([1, 2])
        assert f.key_types == {"text"}
        bloomkit.save(f, tmp_path / "f.bkf")
        with bloomkit.open(tmp_path / "f.bkf") as m:  # read-only map: never written
            _ = [k in m for k in (1, 2, b"y")]
            assert m.key_types == {"text"}
        assert bloomkit.load(tmp_path / "f.bkf").key_types == {"text"}

    def test_copies_keep_it(self, name: str) -> None:
        f = MAKERS[name]()
        f.add(7)
        for g in (f.copy(), pickle.loads(pickle.dumps(f)), bloomkit.loads(f.to_bytes()),
                  type(f).from_bytes(f.to_bytes())):
            assert g.key_types == {"int"}

    def test_unknown_when_not_recorded(self, name: str) -> None:
        f = MAKERS[name]()
        f.add(7)
        old = bloomkit.loads(without_key_domains(f))
        assert old.key_types is None
        assert 7 in old and old == f  # the bits are no part of what a filter holds
        old.add("y")  # an unknown record stays unknown
        assert old.key_types is None


def test_key_function_records_what_it_returns() -> None:
    f = bloomkit.BloomFilter(100, 0.01, key=lambda row: row["id"])
    f.add({"id": 3})
    assert f.key_types == {"int"}
    g = bloomkit.BloomFilter(100, 0.01, key=lambda row: row["name"])
    g.add_many([{"name": "a"}])
    assert g.key_types == {"text"}


@pytest.mark.parametrize("name", kind_list.names(lambda k: k.mergeable and _adds(k)))
def test_unions_or_the_domains(name: str) -> None:
    a, b = MAKERS[name](), MAKERS[name]()
    a.add(1)
    b.add("one")
    merge = kind_list.recipes()[name].merge  # the kind's own union (test_cli's too)
    assert merge is not None, f"{name} is mergeable: its recipe needs its merge"
    merged = merge(a, b)
    assert merged.key_types == {"int", "text"}
    if not hasattr(type(a), "__ior__"):  # a sketch: a + b is its only union
        return
    a |= b
    assert a.key_types == {"int", "text"}
    unknown = type(b).from_bytes(without_key_domains(b))
    a |= unknown  # a union with a state of unknown domains is unknown
    assert a.key_types is None


def test_growth_rebuilds_and_conversions_keep_it() -> None:
    s = bloomkit.ScalableBloomFilter(initial_capacity=10)
    s.add_many(range(2000))  # many links: the chain is reassembled as it grows
    assert s.num_links > 3 and s.key_types == {"int"}
    g = bloomkit.GrowableFilter(10, 0.01)
    g.add_many([f"k{i}" for i in range(5000)])
    assert g.key_types == {"text"}
    q = bloomkit.QuotientFilter(1000, 0.01)
    q.add_many(range(100))
    assert q.resized(4000).key_types == {"int"}
    c = bloomkit.CountingBloomFilter(1000, 0.01, layout="classic")
    c.add(5)
    assert c.to_bloom().key_types == {"int"}


def test_static_filter_records_the_keys_it_was_built_from() -> None:
    f = bloomkit.BinaryFuseFilter(np.arange(1000))
    assert f.key_types == {"int"}
    assert bloomkit.BinaryFuseFilter(["a", b"b"]).key_types == {"text"}
    hs = bloomkit.BinaryFuseFilter.hash_keys(range(100))
    assert bloomkit.BinaryFuseFilter.from_hashes(hs).key_types is None  # hashes say nothing
    assert bloomkit.BinaryFuseFilter.from_hashes(hs, key_types={"int"}).key_types == {"int"}
    with pytest.raises(ValueError, match="key_types"):
        bloomkit.BinaryFuseFilter.from_hashes(hs, key_types={"float"})


def test_build_from_records_the_column_type(tmp_path: Path) -> None:
    np.save(tmp_path / "ids.npy", np.arange(50, dtype=np.int64))
    (tmp_path / "words.txt").write_text("a\nb\n")
    for kind in (bloomkit.BlockedBloomFilter, bloomkit.BinaryFuseFilter):
        assert bloomkit.build_from(tmp_path / "ids.npy", kind).key_types == {"int"}
        assert bloomkit.build_from(tmp_path / "words.txt", kind).key_types == {"text"}


def test_a_mapped_writer_records_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "m.bkf"
    bloomkit.save(bloomkit.BloomFilter(1000, 0.01), path)
    with bloomkit.open(path, "r+") as f:
        f.add_many(np.arange(10))
        assert f.dirty and f.key_types == {"int"}  # DIRTY and the domains share no byte
    with bloomkit.open(path, "r+") as f:
        f.add("t")
    assert bloomkit.load(path).key_types == {"int", "text"}
    assert bloomkit.verify(path)["flags"] & 0xFF == 0  # closed cleanly, domains kept


def test_the_header_bits_and_old_readers() -> None:
    """Bits 8, 9 and 11 (compatible: a reader that does not know them ignores
    them); nested containers (scalable links) carry none, so a bloomkit from
    before the record, which requires a link's flags to be exactly the
    chain's KEYED bit, still reads every new state (so do Parquet index
    entries: tests/test_parquet_index.py builds and reads them)."""
    f = bloomkit.BloomFilter(100, 0.01)
    f.add_many([1, "a"])
    assert _core.peek_header(f.to_bytes())["flags"] == 0x0100 | 0x0200 | 0x0800
    s = bloomkit.ScalableBloomFilter(initial_capacity=10)
    s.add_many([1, "a", *range(500)])
    data = s.to_bytes()
    head = _core.peek_header(data)
    assert head["flags"] == 0x0B00 and s.num_links > 2
    magic = data[:8]
    links = [i for i in range(head["header_len"], len(data), 64) if data[i:i + 8] == magic]
    assert len(links) == s.num_links
    assert all(data[i + 14:i + 16] == b"\0\0" for i in links)


def test_init_header_and_set_key_domains() -> None:
    buf = bytearray(128)
    _core.init_header(buf, 1, 128, 48, 0)
    assert buf[15] == 0  # default -1: unknown (what a Redis-assembled state says)
    _core.init_header(buf, 1, 128, 48, 0, key_domains=1)
    assert buf[15] == 0x09
    _core.set_key_domains(buf, 3)
    assert buf[15] == 0x0B
    _core.set_key_domains(buf, -1)
    assert buf[15] == 0
    with pytest.raises(ValueError, match="key_domains"):
        _core.set_key_domains(buf, 4)


def test_topk_records_in_its_sketch() -> None:
    pa = pytest.importorskip("pyarrow")
    for keys, want in (([1, 2], {"int"}), (["a"], {"text"}), (np.arange(3), {"int"}),
                       (pa.array([1, None]), {"int"}), (iter([b"x", 3]), {"int", "text"})):
        t = bloomkit.TopK(5)
        t.update(keys)
        assert t.sketch.key_types == want, keys
    t = bloomkit.TopK(5)
    t.add("k")
    assert t.sketch.key_types == {"text"}
