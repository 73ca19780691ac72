"""Error messages name the public API and the real reason (issue #16).

A wrong constructor call names the class the caller wrote (never a private
base such as ``_BloomFacade``); a loader handed something that is not
bloomkit data says so (never a memoryview internal, never "truncated" for
bytes of another format); a Redis call that writes no key does not talk
about confirmed keys; a parameter mismatch shows the values compared.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import bloomkit
from bloomkit import FormatError
from redis_fixtures import RedisServer, free_port, no_retry, require_redis

CONSTRUCTORS = [
    bloomkit.BloomFilter,
    bloomkit.BlockedBloomFilter,
    bloomkit.CountingBloomFilter,
    bloomkit.CuckooFilter,
    bloomkit.QuotientFilter,
    bloomkit.CountMinSketch,
    bloomkit.TinyLFU,
]


class ConstructorNameTests:
    @pytest.mark.parametrize("cls", CONSTRUCTORS, ids=lambda c: c.__name__)
    def test_missing_argument_names_the_class(self, cls: type) -> None:
        with pytest.raises(TypeError) as info:
            cls()
        assert str(info.value).startswith(f"{cls.__name__}.__new__() missing"), info.value
        assert "_" + "Facade" not in str(info.value) and "Base" not in str(info.value)

    @pytest.mark.parametrize("cls", [*CONSTRUCTORS, bloomkit.ScalableBloomFilter],
                             ids=lambda c: c.__name__)
    def test_unknown_keyword_names_the_class(self, cls: type) -> None:
        with pytest.raises(TypeError, match=rf"^{cls.__name__}\.__new__\(\) got an unexpected"):
            cls(100, bogus=1)

    def test_subscripting_is_for_annotations_only(self) -> None:
        alias = bloomkit.BloomFilter[str]
        assert alias.__origin__ is bloomkit.BloomFilter
        f = bloomkit.BloomFilter(100)
        assert type(f) is bloomkit.BloomFilter and isinstance(f, bloomkit.BloomFilter)


class LoadsMessageTests:
    @pytest.mark.parametrize("data", [None, 3, 1.5, object(), ["x"]],
                             ids=lambda d: type(d).__name__)
    def test_not_bytes_like_is_a_type_error_naming_loads(self, data: Any) -> None:
        with pytest.raises(TypeError) as info:
            bloomkit.loads(data)
        text = str(info.value)
        assert text.startswith("loads() takes bytes-like data"), text
        assert f"not {type(data).__name__}" in text and "memoryview:" not in text

    def test_str_is_refused_too(self) -> None:
        with pytest.raises(TypeError, match=r"^loads\(\) takes bytes-like data .*not str$"):
            bloomkit.loads("\x89BKF")

    @pytest.mark.parametrize("data", [b"garbage", b"x", b"PK\x03\x04" + bytes(30),
                                      b"garbage" * 20], ids=len)
    def test_other_bytes_are_not_a_bloomkit_file(self, data: bytes) -> None:
        with pytest.raises(FormatError, match="bad magic: not a bloomkit file") as info:
            bloomkit.loads(data)
        assert "truncated" not in str(info.value)

    @pytest.mark.parametrize("cut", [0, 1, 8, 63])
    def test_a_cut_bloomkit_header_is_truncated(self, cut: int) -> None:
        data = bloomkit.BloomFilter(100).to_bytes()[:cut]
        with pytest.raises(FormatError, match="truncated"):
            bloomkit.loads(data)

    def test_from_bytes_says_the_same(self) -> None:
        with pytest.raises(FormatError, match="bad magic"):
            bloomkit.BloomFilter.from_bytes(b"garbage")

    def test_a_short_foreign_file_is_not_a_bloomkit_file(self, tmp_path: Path) -> None:
        path = tmp_path / "notes.txt"
        path.write_bytes(b"hello\n")
        with pytest.raises(FormatError, match="bad magic"):
            bloomkit.load(path)
        cut = tmp_path / "cut.bkf"
        cut.write_bytes(bloomkit.BloomFilter(100).to_bytes()[:40])
        with pytest.raises(FormatError, match="truncated"):
            bloomkit.load(cut)


class RedisMessageTests:
    def test_open_on_a_dead_server_does_not_count_keys(self) -> None:
        pytest.importorskip("redis", reason="needs the redis package (the redis extra)")
        import redis

        from bloomkit.redis import (
            RedisBloomFilter,
            RedisConnectionLost,
            RedisCountingBloomFilter,
            RedisCountMinSketch,
        )

        client = redis.Redis(host="127.0.0.1", port=free_port(), retry=no_retry(),
                             socket_connect_timeout=1)
        for cls in (RedisBloomFilter, RedisCountingBloomFilter, RedisCountMinSketch):
            with pytest.raises(RedisConnectionLost) as info:
                cls.open(client, "absent")
            text = str(info.value)
            assert "during open('absent')" in text, text
            assert "confirmed" not in text and "nothing was changed" in text, text

    def test_mismatch_shows_both_sides(self, tmp_path: Path) -> None:
        require_redis()
        from bloomkit.redis import FilterMismatchError, RedisBloomFilter

        server = RedisServer(tmp_path / "redis").start()
        try:
            client = server.client()
            RedisBloomFilter.create(client, "m", 1000, 0.01)
            with pytest.raises(FilterMismatchError) as info:
                RedisBloomFilter.open(client, "m", capacity=2000)
            text = str(info.value)
            assert "None" not in text, text
            assert "capacity=1000, error_rate=0.01 (expected" in text, text
            assert "for capacity=2000, error_rate=0.01)" in text, text
            with pytest.raises(FilterMismatchError) as info:
                RedisBloomFilter.open(client, "m", error_rate=0.001)
            assert "for capacity=1000, error_rate=0.001)" in str(info.value), info.value
        finally:
            server.stop()


# ---- one message family for every batch method (issue #31 item 11) -------------------

_NOT_A_BATCH = [(5, "int (not iterable)"), (None, "NoneType (not iterable)"),
                (1.5, "float (not iterable)"), ("abc", "a single str"), (b"abc", "a single bytes")]


def _local_batches() -> list[tuple[str, Any]]:
    import numpy as np

    out: list[tuple[str, Any]] = []
    for f in (bloomkit.BloomFilter(10), bloomkit.BlockedBloomFilter(10),
              bloomkit.CountingBloomFilter(10), bloomkit.CuckooFilter(10),
              bloomkit.QuotientFilter(10), bloomkit.ScalableBloomFilter(10),
              bloomkit.SlidingBloomFilter(10), bloomkit.BinaryFuseFilter(np.arange(3)),
              bloomkit.CountMinSketch.from_error(0.01, 0.01), bloomkit.TopK(3)):
        for m in ("add_many", "contains_many", "remove_many", "update", "estimate_many"):
            if hasattr(f, m) and not (isinstance(f, bloomkit.BinaryFuseFilter)
                                      and m in ("add_many", "update")):  # static: own TypeError
                out.append((f"{type(f).__name__}.{m}", getattr(f, m)))
    out.append(("BinaryFuseFilter()", bloomkit.BinaryFuseFilter))
    return out


@pytest.mark.parametrize("arg,said", _NOT_A_BATCH, ids=[repr(a) for a, _ in _NOT_A_BATCH])
def test_every_local_batch_method_explains_a_non_batch(arg: Any, said: str) -> None:
    """`f.contains_many(5)` said only "'int' object is not iterable" where
    `add_many("abc")` explained: every batch method now says what it got and
    what to do, in one family of words."""
    bad = []
    for name, method in _local_batches():
        try:
            method(arg)
        except TypeError as e:
            text = str(e)
            if not (text.startswith(f"expected an iterable of keys, got {said}")
                    and "for one key, or wrap it in a list" in text):
                bad.append(f"{name}({arg!r}): {text}")
        else:
            bad.append(f"{name}({arg!r}) raised nothing")
    assert not bad, "\n".join(bad)


def test_every_redis_batch_method_explains_a_non_batch(tmp_path: Path) -> None:
    require_redis()
    from bloomkit.redis import (
        RedisBloomFilter,
        RedisCountingBloomFilter,
        RedisCountMinSketch,
        RedisSlidingBloomFilter,
    )

    server = RedisServer(tmp_path / "redis").start()
    try:
        client = server.client()
        filters = [RedisBloomFilter.create(client, "b", 100, 0.01),
                   RedisCountingBloomFilter.create(client, "c", 100, 0.01),
                   RedisCountMinSketch.create(client, "m", 1000, 4),
                   RedisSlidingBloomFilter.create(client, "s", 100, 0.01)]
        bad = []
        for f in filters:
            for m in ("add_many", "contains_many", "remove_many", "update", "estimate_many"):
                if not hasattr(f, m):
                    continue
                for arg, said in _NOT_A_BATCH:
                    try:
                        getattr(f, m)(arg)
                    except TypeError as e:
                        if not str(e).startswith(f"expected an iterable of keys, got {said}"):
                            bad.append(f"{type(f).__name__}.{m}({arg!r}): {e}")
                    else:
                        bad.append(f"{type(f).__name__}.{m}({arg!r}) raised nothing")
        assert not bad, "\n".join(bad)
    finally:
        server.stop()


def _designed_kinds() -> list[tuple[str, Any]]:
    """Every kind whose constructor takes (capacity, error_rate), by its descriptor:
    a capacity parameter and an error-rate range (the CLI's sizing rule)."""
    return [
        (name, kind) for name, kind in bloomkit._core.KINDS.items()
        if kind.capacity_max and kind.error_rate_min is not None
        and hasattr(bloomkit, name) and not kind.static
    ]


@pytest.mark.parametrize("name,kind", _designed_kinds(), ids=[n for n, _ in _designed_kinds()])
def test_design_limits_come_from_the_descriptor(name: str, kind: Any) -> None:
    """Every designed kind refuses a capacity past its descriptor's limit and an
    error rate outside its range with a ValueError naming the limit, the way the
    Bloom family words it (GrowableFilter said "capacity too large for a growable
    filter" and "(0, 1)" before)."""
    from bloomkit._descriptor import power_text

    cls = getattr(bloomkit, name)
    with pytest.raises(ValueError, match=r"capacity .*" + re.escape(power_text(kind.capacity_max))):
        cls(kind.capacity_max + 1, 0.01)
    for rate in (kind.error_rate_min / 10, 1.0, float("nan")):
        with pytest.raises(ValueError, match="error_rate must be"):
            cls(1000, rate)
    with pytest.raises(TypeError, match="capacity must be"):
        cls(1000.0, 0.01)


def test_c_bases_check_the_design_against_the_descriptor() -> None:
    """The glue's own check (behind the facades') reads the kind's descriptor: a
    capacity past its limit, or a rate no state may record, is refused by the C base
    too (the glue checked 2**48 itself before).  A rate below the constructors' floor
    is the facade's to refuse: with_size records what its shape implies."""
    core = bloomkit._core
    for rate in (0.0, 1.0, float("nan")):
        with pytest.raises(ValueError, match=r"error_rate in \(0, 1\)"):
            core.BloomBase(0, 64, 4, 10, rate)
        with pytest.raises(ValueError, match=r"error_rate in \(0, 1\)"):
            core.QuotientBase(4, 8, 10, rate, 0.9)
    with pytest.raises(ValueError, match=r"capacity must be in \[1, 2\*\*48\]"):
        core.BloomBase(0, 64, 4, 2**48 + 1, 0.01)
    core.BloomBase(0, 64, 4, 10, 1e-13)
    bloomkit.BloomFilter.with_size(100_003, 64)
