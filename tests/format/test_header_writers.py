"""The one home of the header (issue #24): _core.init_header, set_dirty and
seal are bk_format.c's writers, and every structure's header, bloomkit/persist/'s
DIRTY mark and bloomkit.redis's to_local() go through them."""

from __future__ import annotations

from typing import Any

import pytest

import bloomkit
from bloomkit import _core

SECRET = b"0123456789abcdef"


def _states() -> list[Any]:
    return [
        bloomkit.BloomFilter(1000, 0.01, seed=7),
        bloomkit.BlockedBloomFilter(1000, 0.01, secret=SECRET),
        bloomkit.CountingBloomFilter(1000, 0.01),
        bloomkit.CuckooFilter(1000, 0.01, secret=SECRET),
        bloomkit.QuotientFilter(1000, 0.01, seed=3),
        bloomkit.CountMinSketch(1000, 4),
        bloomkit.ScalableBloomFilter(100, 0.01),
    ]


@pytest.mark.parametrize("obj", _states(), ids=lambda o: type(o).__name__)
def test_init_header_writes_what_every_constructor_wrote(obj: Any) -> None:
    data = obj.to_bytes()
    h = _core.peek_header(data)
    keyed = bool(h["flags"] & 0x0002)
    head = bytearray(b"\xff" * h["header_len"])
    # key_domains=0: recorded, none yet (what a fresh constructor writes; the
    # default -1, unknown, is what a Redis-assembled state says)
    _core.init_header(head, h["kind"], h["header_len"], h["params_len"], h["payload_len"],
                      h["seed"], h["key_check"] if keyed else None, key_domains=0)
    assert bytes(head[64:]) == bytes(h["header_len"] - 64)  # params zeroed, left to the kind
    expect = bytearray(data[:64])
    _core.seal(expect, 0)
    assert bytes(head[:64]) == bytes(expect)


def test_set_dirty_returns_the_old_bit_and_keeps_the_seal() -> None:
    f = bloomkit.BloomFilter(100, 0.01)
    f.add("x")
    data = bytearray(f.to_bytes())
    assert _core.set_dirty(data, True) is False
    assert _core.peek_header(data)["flags"] & bloomkit.persist.FLAG_DIRTY
    with pytest.raises(bloomkit.FormatError):
        _core.validate(data)
    _core.validate(data, allow_dirty=True)  # the checksum does not cover DIRTY
    assert _core.set_dirty(data, False) is True
    assert bytes(data) == f.to_bytes()


def test_seal_stores_the_checksum() -> None:
    f = bloomkit.CountingBloomFilter(100, 0.01)
    f.add("x")
    data = bytearray(f.to_bytes())
    _core.seal(data, 12345)
    assert _core.peek_header(data)["checksum"] == 12345
    with pytest.raises(bloomkit.FormatError):
        _core.validate(data)
    _core.seal(data)
    assert bytes(data) == f.to_bytes()


def test_bad_arguments_are_clean_errors() -> None:
    with pytest.raises(BufferError):
        _core.set_dirty(b"x" * 64, True)  # read-only
    with pytest.raises(ValueError, match="shorter"):
        _core.set_dirty(bytearray(10), True)
    with pytest.raises(bloomkit.FormatError):
        _core.seal(bytearray(128))  # no magic: the whole state is parsed first
    with pytest.raises(ValueError, match="kind"):
        _core.init_header(bytearray(128), 0, 128, 48, 0)
    with pytest.raises(ValueError, match="header_len"):
        _core.init_header(bytearray(128), 1, 100, 48, 0)
    with pytest.raises(ValueError, match="header_len"):
        _core.init_header(bytearray(128), 1, 128, 65, 0)
    with pytest.raises(ValueError, match="shorter"):
        _core.init_header(bytearray(64), 1, 128, 48, 0)
