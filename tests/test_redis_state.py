"""A damaged or foreign Redis state raises one error family (issue #34 item 12).

A key of a filter replaced by another Redis type gave a raw
``redis.exceptions.ResponseError`` (WRONGTYPE) from add, ``in``, ``len``,
to_local and open; a damaged state field a raw ``ValueError`` (``g=abc``) or
``struct.error`` (``inserted=1e30``); ``g = 2**53 + 1`` lost keys silently.
Now: :class:`bloomkit.redis.WrongTypeError` and
:class:`bloomkit.redis.CorruptStateError`, both :class:`RedisStateError`
(a :class:`bloomkit.FormatError` and a ``FilterMismatchError``), raised
before the state answers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import bloomkit
from key_domains import without_key_domains
from redis_fixtures import RedisServer, require_redis


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    require_redis()
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    try:
        yield server.client()
    finally:
        server.stop()


def _makers() -> dict[str, Callable[[Any, str], Any]]:
    from bloomkit.redis import (
        RedisBloomFilter,
        RedisCountingBloomFilter,
        RedisCountMinSketch,
        RedisSlidingBloomFilter,
    )

    return {
        "bloom": lambda c, n: RedisBloomFilter.create(c, n, 100, 0.01),
        "counting": lambda c, n: RedisCountingBloomFilter.create(c, n, 100, 0.01),
        "cms": lambda c, n: RedisCountMinSketch.create(c, n, 100, 4),
        "sliding": lambda c, n: RedisSlidingBloomFilter.create(c, n, 100, 0.01),
        "sliding-time": lambda c, n: RedisSlidingBloomFilter.create(c, n, 100, 0.01,
                                                                    window=60.0),
    }


def _ops(h: Any, c: Any, name: str) -> dict[str, Callable[[], object]]:
    ops: dict[str, Callable[[], object]] = {
        "add": lambda: h.add("b"), "add_many": lambda: h.add_many(["c", "d"]),
        "to_local": h.to_local, "open": lambda: type(h).open(c, name)}
    if hasattr(h, "__contains__"):
        ops["in"] = lambda: "a" in h
    if hasattr(h, "contains_many"):
        ops["contains_many"] = lambda: h.contains_many(["a"])
    if hasattr(h, "__len__"):
        ops["len"] = lambda: len(h)  # reads the state hash only
    if hasattr(h, "estimate"):
        ops["estimate"] = lambda: h.estimate("a")
    return ops


@pytest.mark.parametrize("kind", sorted(_makers()))
def test_a_key_replaced_by_another_type_is_wrong_type(kind: str, client: Any) -> None:
    from bloomkit.redis import RedisStateError, WrongTypeError

    name = f"wt-{kind}"
    h = _makers()[kind](client, name)
    h.add("a")
    bad = []
    for key in sorted(k.decode() for k in client.keys(f"{{{name}}}*")):
        dump = client.dump(key)
        for rtype in ("list", "set"):
            client.delete(key)
            if rtype == "list":
                client.rpush(key, "x")
            else:
                client.sadd(key, "x")
            for op, fn in _ops(h, client, name).items():
                try:
                    fn()
                except WrongTypeError as e:
                    assert isinstance(e, RedisStateError) and isinstance(e, bloomkit.FormatError)
                    assert name in str(e) or key in str(e), str(e)
                except Exception as e:
                    bad.append(f"{key} as a {rtype}: {op}: {type(e).__module__}."
                               f"{type(e).__name__}: {e}")
                else:
                    # the meta hash is read at open; len reads the state hash only
                    if not ((key.endswith(":meta") and op != "open")
                            or (op == "len" and not key.endswith(":n"))):
                        bad.append(f"{key} as a {rtype}: {op}: no error")
        client.delete(key)
        client.restore(key, 0, dump)
        assert "a" in h if hasattr(h, "__contains__") else True
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("field,value", [
    ("g", "abc"), ("inserted", "1e30"), ("g", str(2**53 + 1)), ("c", "-1"),
    ("start", str(2**60)), ("early", ""), ("b0", "12"), ("b1", "x 0"),
    ("layout", "0"), ("layout", "7"), ("layout", "")])
def test_a_damaged_sliding_state_is_corrupt(field: str, value: str, client: Any) -> None:
    """Before: ValueError, struct.error, or (g = 2**53 + 1) keys silently lost.
    The layout field (issue #32: layout 1's blocks read as layout 0's slices,
    or the reverse, would answer from the wrong bits) is checked by every
    script and by to_local."""
    from bloomkit.redis import CorruptStateError, RedisSlidingBloomFilter

    name = f"corrupt-{field}-{abs(hash(value)) % 10**6}"
    h = RedisSlidingBloomFilter.create(client, name, 1000, 0.01, window=60.0)
    h.add_many([f"k{i}" for i in range(50)])
    client.hset(f"{{{name}}}:n", field, value)
    ops = {"add": lambda: h.add("z"), "in": lambda: "k1" in h, "len": lambda: len(h),
           "to_local": h.to_local, "contains_many": lambda: h.contains_many(["k1"])}
    if field == "g":
        ops["generation"] = lambda: h.generation
    if field in ("c", "early", "layout") or field.startswith("b"):
        del ops["len"]  # len reads start, g, inserted and one birth record (of its own)
    bad = []
    for op, fn in ops.items():
        try:
            r = fn()
        except CorruptStateError as e:
            assert field in str(e) or "state" in str(e), str(e)
        except Exception as e:
            bad.append(f"{field}={value!r}: {op}: {type(e).__name__}: {e}")
        else:
            # the script reads only the fields it needs: a damaged birth record
            # of a slice no query touches may answer; a False here is a loss
            if field.startswith("b") and op in ("add", "in", "contains_many"):
                assert r in (True, [True], False), r
                if op in ("in", "contains_many"):
                    assert r in (True, [True]), f"{field}={value!r}: {op} lost k1"
            else:
                bad.append(f"{field}={value!r}: {op}: answered {r!r}")
    assert not bad, "\n".join(bad)


def test_a_counting_filters_signed_delta_is_not_corrupt(client: Any) -> None:
    """'dd' (new distinct keys minus zeroed ones since the last merge) goes
    below 0 when a merged-in key is removed: an honest state, which to_local
    must read (the range check of #34 item 12 refused it as corrupt)."""
    from bloomkit.redis import RedisCountingBloomFilter

    name = "signed-dd"
    RedisCountingBloomFilter.delete_named(client, name)
    h = RedisCountingBloomFilter.create(client, name, 100, 0.01)
    local = bloomkit.CountingBloomFilter(100, 0.01, layout="classic")
    local.add_many(["a", "b"])
    h.merge_from(local)  # resets dd to 0
    h.remove("a")        # zeroes the key's counters: dd = -1
    assert int(client.hget(h._hash_key, "dd")) < 0
    got = h.to_local()
    assert "b" in got and len(got) == 1
    local.remove("a")
    assert got.to_bytes() == without_key_domains(local)
    h.delete()
