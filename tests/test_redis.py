"""bloomkit.redis against real redis-server processes (R26).

The fixtures start redis-server on free loopback ports (see redis_fixtures.py);
without the binaries the tests skip with the install command, in CI they fail.
"""

from __future__ import annotations

import math
import multiprocessing
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bloomkit import BlockedBloomFilter, BloomFilter, CapacityError, IncompatibleFiltersError
from key_domains import without_key_domains
from redis_fixtures import RedisClusterNodes, RedisServer, no_retry, require_redis

try:
    import redis

    from bloomkit.redis import (
        FilterExistsError,
        FilterMismatchError,
        FilterNotFoundError,
        RedisBloomFilter,
        RedisConnectionLost,
        RedisCountingBloomFilter,
        RedisCountMinSketch,
        RedisFilterError,
    )
except ImportError:  # the fixtures skip (or fail in CI) with the install hint
    redis = None

LOCAL = {"classic": BloomFilter, "blocked": BlockedBloomFilter}
SECRET = bytes(range(16))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    require_redis()
    s = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisClusterNodes]:
    require_redis()
    c = RedisClusterNodes(tmp_path_factory.mktemp("cluster")).start()
    yield c
    c.stop()


@pytest.fixture
def client(server: RedisServer) -> Any:
    return server.client()


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    return "t:" + request.node.name.replace("[", ":").replace("]", "")


def _keys(rng: Any, n: int) -> list[object]:
    out: list[object] = []
    for i in range(n):
        r = i % 3
        if r == 0:
            out.append(f"user:{rng.getrandbits(40)}")
        elif r == 1:
            out.append(rng.getrandbits(70) - 2**69)
        else:
            out.append(rng.randbytes(rng.randrange(1, 24)))
    return out


@pytest.mark.parametrize("layout", ["classic", "blocked"])
class SameAsLocalTests:
    def test_answers_and_bytes_match_a_local_build(self, client: Any, name: str, layout: str,
                                                    rng: Any) -> None:
        f = RedisBloomFilter.create(client, name, 3000, 0.01, layout=layout, seed=7)
        local = LOCAL[layout](3000, 0.01, seed=7)
        keys = _keys(rng, 2500)
        keys += keys[:300]  # duplicates: "was new" must be False for them
        single = [f.add(k) for k in keys[:400]]
        assert single == [local.add(k) for k in keys[:400]]
        assert f.add_many(keys[400:]) == local.add_many(keys[400:])
        probes = keys + _keys(rng, 3000)
        assert f.contains_many(probes) == list(local.contains_many(probes))
        assert [k in f for k in probes[:200]] == [k in local for k in probes[:200]]
        got = f.to_local()
        assert type(got) is type(local)
        assert got.to_bytes() == without_key_domains(local)
        assert len(f) == len(local)

    def test_keyed_filter_needs_its_secret(self, client: Any, name: str, layout: str,
                                           rng: Any) -> None:
        f = RedisBloomFilter.create(client, name, 1000, 0.01, layout=layout, secret=SECRET)
        local = LOCAL[layout](1000, 0.01, secret=SECRET)
        keys = _keys(rng, 800)
        assert f.add_many(keys) == local.add_many(keys)
        assert f.to_local().to_bytes() == without_key_domains(local)
        again = RedisBloomFilter.open(client, name, secret=SECRET)
        assert all(again.contains_many(keys))
        with pytest.raises(FilterMismatchError, match="wrong secret"):
            RedisBloomFilter.open(client, name, secret=bytes(16))
        with pytest.raises(FilterMismatchError, match="secret"):
            RedisBloomFilter.open(client, name)

    def test_merge_from_is_the_local_union(self, client: Any, name: str, layout: str,
                                           rng: Any) -> None:
        f = RedisBloomFilter.create(client, name, 4000, 0.01, layout=layout)
        mine, other = LOCAL[layout](4000, 0.01), LOCAL[layout](4000, 0.01)
        a, b, c = _keys(rng, 1500), _keys(rng, 1500), _keys(rng, 300)
        f.add_many(a)
        mine.add_many(a)
        other.add_many(b)
        f.merge_from(other)
        mine |= other
        assert f.to_local().to_bytes() == without_key_domains(mine)
        assert f.add_many(c) == mine.add_many(c)  # the count carries on from the estimate
        assert f.to_local().to_bytes() == without_key_domains(mine)
        with pytest.raises(IncompatibleFiltersError):
            f.merge_from(LOCAL[layout](4000, 0.01, seed=1))
        with pytest.raises(IncompatibleFiltersError):
            f.merge_from(LOCAL[layout](5000, 0.01))
        with pytest.raises(IncompatibleFiltersError):
            f.merge_from(LOCAL[layout](4000, 0.01, secret=SECRET))
        other_layout = "blocked" if layout == "classic" else "classic"
        with pytest.raises(IncompatibleFiltersError):
            f.merge_from(LOCAL[other_layout](4000, 0.01))
        assert f.to_local().to_bytes() == without_key_domains(mine)


class LifecycleTests:
    def test_create_open_delete(self, client: Any, name: str) -> None:
        with pytest.raises(FilterNotFoundError, match="no bloomkit filter"):
            RedisBloomFilter.open(client, name)
        f = RedisBloomFilter.create(client, name, 1000, 0.001, seed=3)
        with pytest.raises(FilterExistsError):
            RedisBloomFilter.create(client, name, 1000, 0.001)
        f.add("a")
        g = RedisBloomFilter.open(client, name, capacity=1000, error_rate=0.001, seed=3)
        assert "a" in g and (g.num_bits, g.num_hashes) == (f.num_bits, f.num_hashes)
        with pytest.raises(FilterMismatchError, match="size"):
            RedisBloomFilter.open(client, name, capacity=2000)
        with pytest.raises(FilterMismatchError, match="layout"):
            RedisBloomFilter.open(client, name, layout="blocked")
        with pytest.raises(FilterMismatchError, match="seed"):
            RedisBloomFilter.open(client, name, seed=4)
        assert RedisBloomFilter.open_or_create(client, name, 1000, 0.001, seed=3).num_bits \
            == f.num_bits
        assert f.delete()
        assert client.keys(f"{{{name}}}*") == []
        with pytest.raises(FilterNotFoundError):
            g.add("b")  # a live handle on a deleted filter never re-grows its key
        with pytest.raises(FilterNotFoundError):
            _ = "a" in g
        with pytest.raises(FilterNotFoundError):
            g.contains_many(["a", "b"])  # the raw BITFIELD_RO path checks gen too
        assert g.contains_many([]) == []
        RedisBloomFilter.create(client, name, 1000, 0.001, seed=3)
        with pytest.raises(FilterNotFoundError, match="replaced"):
            g.add_many(["x", "y"])  # same name and shape, new creation: refused
        with pytest.raises(FilterNotFoundError, match="replaced"):
            g.contains_many(["x", "y"])
        assert RedisBloomFilter.open(client, name).contains_many(["a", "x"]) == [False, False]
        assert not f.delete() or True

    def test_bad_arguments_write_nothing(self, client: Any, name: str) -> None:
        with pytest.raises(CapacityError, match=r"512 MiB.*shards"):
            RedisBloomFilter.create(client, name, 10**9, 0.01)  # 1.2 GB classic
        with pytest.raises(CapacityError, match="shards >= 3"):
            RedisBloomFilter.create(client, name, 10**9, 0.01, layout="blocked")
        with pytest.raises(ValueError, match="layout='blocked'"):
            RedisBloomFilter.create(client, name, 1000, shards=2)
        with pytest.raises(ValueError, match="too many"):
            RedisBloomFilter.create(client, name, 10, layout="blocked", shards=50)
        with pytest.raises(ValueError, match="hash tags"):
            RedisBloomFilter.create(client, "a{b}", 1000)
        with pytest.raises(ValueError, match="layout"):
            RedisBloomFilter.create(client, name, 1000, layout="cuckoo")
        with pytest.raises(ValueError):
            RedisBloomFilter.create(client, name, 1000, error_rate=1.5)
        with pytest.raises(ValueError, match="decode_responses"):
            RedisBloomFilter.create(redis.Redis(port=client.get_connection_kwargs()["port"],
                                                decode_responses=True), name, 1000)
        assert client.keys(f"*{name}*") == []

    def test_a_foreign_key_is_a_mismatch(self, client: Any, name: str) -> None:
        client.hset(f"{{{name}}}:meta", "format", "something-else")
        with pytest.raises(FilterMismatchError, match="does not hold"):
            RedisBloomFilter.open(client, name)
        client.hset(f"{{{name}}}:meta", mapping={"format": "bloomkit-redis/9",
                                                 "structure": "bloom"})
        with pytest.raises(FilterMismatchError, match="this bloomkit reads 'bloomkit-redis/1' "
                                                      "and 'bloomkit-redis/2'"):
            RedisBloomFilter.open(client, name)
        client.delete(f"{{{name}}}:meta")
        client.set(f"{{{name}}}:meta", b"x")
        with pytest.raises(FilterMismatchError):
            RedisBloomFilter.open(client, name)

    def test_a_damaged_shard_is_refused(self, client: Any, name: str) -> None:
        f = RedisBloomFilter.create(client, name, 1000)
        client.append(f.shard_keys[0], b"\0")
        with pytest.raises(FilterMismatchError, match="damaged"):
            RedisBloomFilter.open(client, name)
        with pytest.raises(FilterNotFoundError):
            f.add("k")

    def test_an_error_reply_on_the_raw_path_is_clean(self, client: Any, name: str) -> None:
        f = RedisBloomFilter.create(client, name, 1000)
        f.add("k")
        client.delete(f.shard_keys[0])
        client.rpush(f.shard_keys[0], "not bits")  # WRONGTYPE for BITFIELD_RO
        with pytest.raises(RedisFilterError, match="WRONGTYPE"):
            f.contains_many(["k"] * 20)
        g = RedisBloomFilter.create(client, name + ":2", 1000)
        g.add("k")
        assert g.contains_many(["k", "z"] * 5) == [True, False] * 5  # the pool is sane


class BlockedLayoutVersionTests:
    """A blocked filter created before layout version 1 keeps its derivation."""

    @staticmethod
    def _create_as_before(client: Any, name: str, monkeypatch: pytest.MonkeyPatch,
                          **kwargs: Any) -> None:
        # What create() wrote before version 1: a version-0 shape, format
        # bloomkit-redis/1 and no layout_version field.
        import bloomkit.redis.bloom as bkredis  # where create() looks up design

        real = bkredis.design
        monkeypatch.setattr(bkredis, "design",
                            lambda *a, **kw: real(*a, **{**kw, "layout_version": 0}))
        RedisBloomFilter.create(client, name, 3000, 0.001, layout="blocked", seed=9, **kwargs)
        monkeypatch.setattr(bkredis, "design", real)
        assert client.hget(f"{{{name}}}:meta", "format") == b"bloomkit-redis/1"
        client.hdel(f"{{{name}}}:meta", "layout_version")

    @pytest.mark.parametrize("shards", [1, 3])
    def test_an_old_filter_answers_as_before(self, client: Any, name: str, shards: int,
                                             rng: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self._create_as_before(client, name, monkeypatch, shards=shards)
        f = RedisBloomFilter.open(client, name, capacity=3000, error_rate=0.001)
        assert f.layout_version == 0
        local = BlockedBloomFilter(3000, 0.001, seed=9, layout_version=0)
        assert (f.num_bits, f.num_hashes) == (local.num_bits, local.num_hashes)
        keys = _keys(rng, 2500)
        assert f.add_many(keys[:2000]) == local.add_many(keys[:2000])
        other = BlockedBloomFilter(3000, 0.001, seed=9, layout_version=0)
        other.add_many(keys[2000:])
        f.merge_from(other)
        local |= other
        probes = keys + _keys(rng, 3000)
        assert f.contains_many(probes) == list(local.contains_many(probes))
        assert [k in f for k in probes[:300]] == [k in local for k in probes[:300]]
        got = f.to_local()
        assert got.layout_version == 0 and got.to_bytes() == without_key_domains(local)
        with pytest.raises(IncompatibleFiltersError, match="layout_version"):
            f.merge_from(BlockedBloomFilter.with_size(f.num_bits, f.num_hashes, seed=9))

    def test_a_new_filter_is_version_1_under_its_own_format(self, client: Any,
                                                            name: str) -> None:
        f = RedisBloomFilter.create(client, name, 3000, 0.001, layout="blocked", seed=9)
        meta = client.hgetall(f"{{{name}}}:meta")
        assert (meta[b"format"], meta[b"layout_version"]) == (b"bloomkit-redis/2", b"1")
        assert f.layout_version == 1 and f.to_local().layout_version == 1
        assert f.num_bits == BlockedBloomFilter(3000, 0.001).num_bits
        # a version that does not go with the format is damaged metadata
        client.hset(f"{{{name}}}:meta", "layout_version", "0")
        with pytest.raises(FilterMismatchError, match="damaged"):
            RedisBloomFilter.open(client, name)
        classic = RedisBloomFilter.create(client, name + ":c", 3000, 0.001)
        assert client.hget(f"{{{name}:c}}:meta", "format") == b"bloomkit-redis/1"
        assert classic.layout_version == 0


class StaleHandleTests:
    """Issue #23 item 7: a handle whose structure was deleted (or deleted and
    created again under its name) answers every call with FilterNotFoundError,
    the statistics included: len() and bits_set() used to read the keys of
    whatever now held the name (0, or the new filter's 500 keys and 3437 bits)."""

    @pytest.mark.parametrize("shards", [1, 3])
    def test_bloom_len_and_bits_set(self, client: Any, name: str, shards: int) -> None:
        layout = "blocked" if shards > 1 else "classic"
        old = RedisBloomFilter.create(client, name, 1000, 0.01, layout=layout, shards=shards)
        old.add_many([f"old-{i}" for i in range(300)])
        assert len(old) == 300 and old.bits_set() > 0
        assert old.delete()
        with pytest.raises(FilterNotFoundError, match="deleted or replaced"):
            len(old)
        with pytest.raises(FilterNotFoundError, match="deleted or replaced"):
            old.bits_set()
        new = RedisBloomFilter.create(client, name, 1000, 0.01, layout=layout, shards=shards)
        new.add_many([f"new-{i}" for i in range(500)])
        assert len(new) == 500 and new.bits_set() > 0
        with pytest.raises(FilterNotFoundError, match="deleted or replaced"):
            len(old)
        with pytest.raises(FilterNotFoundError, match="deleted or replaced"):
            old.bits_set()
        assert len(RedisBloomFilter.open(client, name)) == 500  # a fresh handle reads it
        assert new.delete()

    def test_counters_len_and_total(self, client: Any, name: str) -> None:
        cb = RedisCountingBloomFilter.create(client, name + ":cb", 1000, 0.01)
        cms = RedisCountMinSketch.create(client, name + ":cms", 256, 4)
        cb.add_many(["a", "b"])
        cms.add("a", 5)
        assert (len(cb), cms.total) == (2, 5)
        assert cb.delete() and cms.delete()
        with pytest.raises(FilterNotFoundError, match="deleted or replaced"):
            len(cb)
        with pytest.raises(FilterNotFoundError, match="deleted or replaced"):
            _ = cms.total
        cb2 = RedisCountingBloomFilter.create(client, name + ":cb", 1000, 0.01)
        cms2 = RedisCountMinSketch.create(client, name + ":cms", 256, 4)
        cb2.add_many([f"k{i}" for i in range(500)])
        cms2.add("z", 500)
        with pytest.raises(FilterNotFoundError, match="deleted or replaced"):
            len(cb)
        with pytest.raises(FilterNotFoundError, match="deleted or replaced"):
            _ = cms.total
        assert (len(cb2), cms2.total) == (500, 500)
        assert cb2.delete() and cms2.delete()


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("layout", ["classic", "blocked"])
class RawContainsTests:
    """contains_many on a plain client: hand-packed commands, replies read raw."""

    def test_raw_answers_are_the_local_and_scripted_ones(self, server: RedisServer,
                                                         name: str, layout: str,
                                                         protocol: int, rng: Any) -> None:
        client = server.client(protocol=protocol)
        shards = 3 if layout == "blocked" else 1
        opts: dict[str, Any] = {"seed": 11, "secret": SECRET, "key": repr}
        f = RedisBloomFilter.create(client, name, 6000, 0.01, layout=layout, shards=shards,
                                    **opts)
        local = LOCAL[layout](6000, 0.01, **opts)
        keys = _keys(rng, 5000)
        assert f.add_many(keys) == local.add_many(keys)
        probes = keys + _keys(rng, 15_000)  # 20,000: several trips, many recv() calls
        want = list(local.contains_many(probes))
        assert f.contains_many(probes) == want
        f.chunk_size, f.pipeline_depth = 7, 3  # trips of 21 keys, a short last one
        assert f.contains_many(probes[:1000]) == want[:1000]
        f.raw_protocol = False
        assert f.contains_many(probes[:3000]) == want[:3000]
        assert f.to_local().to_bytes() == without_key_domains(local)

    def test_deleted_replaced_and_foreign_keys_are_errors(self, server: RedisServer,
                                                         name: str, layout: str,
                                                         protocol: int) -> None:
        client = server.client(protocol=protocol)
        f = RedisBloomFilter.create(client, name, 1000, layout=layout)
        f.add("k")
        assert f.contains_many(["k", "z"] * 600) == [True, False] * 600
        f.delete()  # GETRANGE of a missing key is an empty string, BITFIELD_RO zeros
        with pytest.raises(FilterNotFoundError, match="deleted or replaced"):
            f.contains_many(["k"] * 2000)
        RedisBloomFilter.create(client, name, 1000, layout=layout)
        with pytest.raises(FilterNotFoundError, match="deleted or replaced"):
            f.contains_many(["k"] * 30)
        g = RedisBloomFilter.open(client, name)
        client.delete(g.shard_keys[0])
        client.rpush(g.shard_keys[0], "not bits")
        with pytest.raises(RedisFilterError, match="WRONGTYPE"):
            g.contains_many(["k"] * 2000)  # errors are shorter than a block reply
        h = RedisBloomFilter.create(client, name + ":2", 1000, layout=layout)
        h.add("k")
        assert h.contains_many(["k", "z"] * 5) == [True, False] * 5  # the pool is sane


@pytest.mark.parametrize("layout", ["classic", "blocked"])
class RawAddTests:
    """add_many on a plain client: hand-packed script calls, one trip ahead."""

    def test_noscript_replies_run_again_with_eval(self, client: Any, name: str,
                                                  layout: str, rng: Any) -> None:
        f = RedisBloomFilter.create(client, name, 5000, 0.01, layout=layout)
        local = LOCAL[layout](5000, 0.01)
        keys = _keys(rng, 3000)
        keys += keys[:500]
        f.chunk_size, f.pipeline_depth = 40, 3  # many trips in flight while NOSCRIPT
        client.script_flush()
        assert f.add_many(keys[:2000]) == local.add_many(keys[:2000])
        client.script_flush()
        f._trips_ahead = 3  # NOSCRIPT in a trip with three more in flight behind it
        assert f.add_many(keys[2000:]) == local.add_many(keys[2000:])
        f._trips_ahead = 0  # one round trip at a time
        assert f.add_many(keys[:1000]) == 0
        assert f.to_local().to_bytes() == without_key_domains(local)
        f.raw_protocol = False  # the redis-py pipeline path gives the same answers
        assert f.add_many(keys[:100]) == 0
        assert len(f) == len(local)


class _FakeSocket:
    """Hands out a reply stream in random-sized pieces."""

    def __init__(self, data: bytes, rng: Any) -> None:
        self.data, self.rng = data, rng

    def recv(self, n: int) -> bytes:
        size = min(n, self.rng.choice([1, 2, 5, 70, 71, 72, 300, 1 << 16]))
        piece, self.data = self.data[:size], self.data[size:]
        return piece


class _FakeConnection:
    def __init__(self, replies: bytes, rng: Any) -> None:
        self._sock = _FakeSocket(replies, rng)
        self.sent: list[bytes] = []
        self.disconnected = False

    def send_packed_command(self, parts: list[bytes], check_health: bool = True) -> None:
        self.sent += parts

    def disconnect(self) -> None:
        self.disconnected = True


@pytest.mark.parametrize("layout", ["classic", "blocked"])
class RawReplyParsingTests:
    """The raw reader on crafted streams: split anywhere, pushes, errors."""

    def _stream(self, f: Any, local: Any, keys: list[object], push_at: int) -> bytes:
        payload = local.to_bytes()[128:]
        out = []
        for i, key in enumerate(keys):
            if i == push_at:
                out.append(b">3\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nx\r\n:7\r\n")
            pos = local._bit_positions(key)
            if f.layout == "blocked":
                b = pos[0] // 512 * 64
                out.append(b"$64\r\n" + payload[b:b + 64] + b"\r\n")
            else:
                bits = [payload[p // 8] >> (p % 8) & 1 for p in pos]
                out.append(b"*%d\r\n" % len(bits) + b"".join(b":%d\r\n" % x for x in bits))
        out.append(b"$16\r\n" + f._gen.encode() + b"\r\n:%d\r\n" % f.payload_len)
        return b"".join(out)

    def test_split_replies_and_pushes(self, client: Any, name: str, layout: str,
                                      rng: Any) -> None:
        f = RedisBloomFilter.create(client, name, 2000, layout=layout)
        local = LOCAL[layout](2000, 0.01)
        local.add_many(_keys(rng, 1500))
        keys = _keys(rng, 400) + _keys(rng, 100)
        want = list(local.contains_many(keys))
        for push_at in (-1, 0, 137, 399):
            conn = _FakeConnection(self._stream(f, local, keys, push_at), rng)
            assert f._contains_trip(conn, keys) == want
            assert not conn.disconnected
        stream = self._stream(f, local, keys, -1)
        cut = 3 * f._raw_size  # a reply boundary: every key's reply has this size
        bad = stream[:cut] + b"-ERR injected\r\n" + stream[cut:]
        conn = _FakeConnection(bad, rng)
        with pytest.raises(RedisFilterError, match="injected"):
            f._contains_trip(conn, keys[:-1])
        assert conn.disconnected


def _expected_collisions(m: int, k: int, distinct: int) -> float:
    """Sum over insertions of the classic false-positive rate at that fill."""
    return sum((1.0 - math.exp(-k * j / m)) ** k for j in range(distinct))


def _worker(port: int, name: str, start: int, n: int, universe: int, out: Any) -> None:
    client = redis.Redis(host="127.0.0.1", port=port)
    f = RedisBloomFilter.open(client, name)
    keys = [f"item:{(start + j) % universe}" for j in range(n)]
    new = sum(f.add(k) for k in keys[:500])  # single-key commands ...
    new += f.add_many(keys[500:])  # ... and pipelined batches
    out.put(new)


class ConcurrentProcessesTests:
    def test_16_processes_overlapping_adds(self, server: RedisServer, client: Any,
                                           name: str) -> None:
        procs, per, universe = 16, 10_000, 40_000
        f = RedisBloomFilter.create(client, name, universe, 0.01)
        ctx = multiprocessing.get_context("fork")
        q = ctx.Queue()
        workers = [
            ctx.Process(target=_worker, args=(server.port, name, i * 2500, per, universe, q))
            for i in range(procs)
        ]
        for w in workers:
            w.start()
        news = [q.get(timeout=120) for _ in workers]
        for w in workers:
            w.join(30)
            assert w.exitcode == 0
        keys = [f"item:{i}" for i in range(universe)]
        assert all(f.contains_many(keys))  # zero false negatives
        total = sum(news)
        collisions = universe - total  # first adds that found every bit already set
        bound = _expected_collisions(f.num_bits, f.num_hashes, universe)
        print(f"was-new sum {total}, collisions {collisions}, expected {bound:.1f}")
        assert 0 <= collisions <= bound + 6 * math.sqrt(bound) + 5
        assert len(f) == total  # the server's counter saw exactly the "was new" answers
        local = BloomFilter(universe, 0.01)
        local.add_many(keys)
        got = f.to_local()
        assert got.to_bytes()[128:] == local.to_bytes()[128:]  # the payload is order-free
        assert len(got) == total


class PersistenceTests:
    def test_state_survives_a_restart(self, tmp_path: Path, rng: Any) -> None:
        require_redis()
        s = RedisServer(tmp_path, None, "--appendonly", "yes", "--appendfsync", "always").start()
        try:
            f = RedisBloomFilter.create(s.client(), "p", 5000, 0.01, layout="blocked")
            keys = _keys(rng, 4000)
            f.add_many(keys)
            before = f.to_local().to_bytes()
            s.restart()  # SIGTERM, then the same dir and port: the AOF is replayed
            g = RedisBloomFilter.open(s.client(), "p")  # the script cache is empty now
            assert g.to_local().to_bytes() == before
            assert all(g.contains_many(keys))
            assert not g.add(keys[0])
        finally:
            s.stop()


class KilledConnectionTests:
    def test_a_killed_connection_leaves_keys_whole(self, server: RedisServer, name: str,
                                                   rng: Any) -> None:
        admin = server.client()
        f = RedisBloomFilter.create(admin, name, 400_000, 0.01)
        worker_client = server.client(retry=no_retry(), client_name="bk-victim")
        victim = RedisBloomFilter.open(worker_client, name)
        victim.chunk_size, victim.pipeline_depth = 50, 64
        keys = [f"k:{rng.getrandbits(64)}" for _ in range(150_000)]
        errors: list[BaseException] = []

        def run() -> None:
            try:
                victim.add_many(keys)
            except BaseException as exc:
                errors.append(exc)

        t = threading.Thread(target=run)
        t.start()
        deadline = time.monotonic() + 60
        while len(f) == 0 and time.monotonic() < deadline:
            time.sleep(0.005)
        killed = admin.client_kill_filter(_type="normal", skipme=True)
        t.join(120)
        assert killed >= 1
        assert len(errors) == 1 and isinstance(errors[0], RedisConnectionLost), errors
        assert "fully added or not at all" in str(errors[0])
        # All-or-nothing: the keys whose k bits are all set explain every set bit.
        got = f.to_local()
        whole = [k for k, present in zip(keys, got.contains_many(keys), strict=True) if present]
        assert 0 < len(whole) < len(keys)
        rebuilt = BloomFilter(400_000, 0.01)
        rebuilt.add_many(whole)
        assert rebuilt.to_bytes()[128:] == got.to_bytes()[128:]
        # Retrying is safe: adds are idempotent and the counter stays exact.
        f.add_many(keys)
        full = BloomFilter(400_000, 0.01)
        assert f.to_local().to_bytes()[128:] == (full.add_many(keys), full.to_bytes())[1][128:]


class ShardedClusterTests:
    def test_sharded_filter_is_the_unsharded_one(self, cluster: RedisClusterNodes,
                                                 rng: Any) -> None:
        client = cluster.client()
        f = RedisBloomFilter.create(client, "sh", 20_000, 0.01, layout="blocked", shards=6,
                                    seed=5)
        flat = RedisBloomFilter.create(client, "flat", 20_000, 0.01, layout="blocked", seed=5)
        nodes = {client.get_node_from_key(k).name for k in f.shard_keys}
        assert len(nodes) >= 2, nodes  # hash tags {sh:0}..{sh:5} spread over the nodes
        local = BlockedBloomFilter(20_000, 0.01, seed=5)
        keys = _keys(rng, 15_000)
        assert [f.add(k) for k in keys[:200]] == [local.add(k) for k in keys[:200]]
        assert f.add_many(keys[200:]) == local.add_many(keys[200:])
        flat.add_many(keys)
        probes = keys[:3000] + _keys(rng, 5000)
        assert f.contains_many(probes) == flat.contains_many(probes) \
            == list(local.contains_many(probes))
        assert f.to_local().to_bytes() == without_key_domains(local)
        per_block = f.shard_bytes * 8
        for k in keys[:50]:
            assert f.shard_of(k) == local._bit_positions(k)[0] // per_block
        other = BlockedBloomFilter(20_000, 0.01, seed=5)
        other.add_many(_keys(rng, 2000))
        f.merge_from(other)
        local |= other
        assert f.to_local().to_bytes() == without_key_domains(local)
        assert RedisBloomFilter.open(client, "sh").shards == 6
        assert f.delete() and flat.delete()
        with pytest.raises(FilterNotFoundError):
            RedisBloomFilter.open(client, "sh")
        with pytest.raises(FilterNotFoundError):
            len(f)  # the generation check of the statistics works on a cluster too
        with pytest.raises(FilterNotFoundError):
            f.bits_set()


# ---- counting Bloom filter and count-min sketch ---------------------------------

def _remove_many_outcome(f: Any, keys: list[object]) -> object:
    try:
        return f.remove_many(keys)
    except KeyError:
        return "KeyError"


def _outcome(f: Any, key: object) -> str:
    try:
        f.remove(key)
    except KeyError:
        return "absent"
    return "removed"


@pytest.mark.parametrize("bits", [4, 8, 16])
class CountingSameAsLocalTests:
    def test_adds_removes_merges_match_a_local_filter(self, client: Any, name: str, bits: int,
                                                      rng: Any) -> None:
        from bloomkit import CountingBloomFilter

        f = RedisCountingBloomFilter.create(client, name, 600, 0.01, counter_bits=bits, seed=3)
        local = CountingBloomFilter(600, 0.01, counter_bits=bits, seed=3, layout="classic")
        # few distinct keys, many repeats: 4-bit counters saturate
        keys = [f"k{rng.randrange(250)}" for _ in range(2500)] + _keys(rng, 200)
        assert [f.add(k) for k in keys[:100]] == [local.add(k) for k in keys[:100]]
        assert f.add_many(keys[100:]) == local.add_many(keys[100:])
        probes = keys[:300] + _keys(rng, 300)
        assert [_outcome(f, k) for k in probes] == [_outcome(local, k) for k in probes]
        assert f.to_local().to_bytes() == without_key_domains(local)
        other = CountingBloomFilter(600, 0.01, counter_bits=bits, seed=3, layout="classic")
        other.add_many(keys[:800])
        f.merge_from(other)
        local |= other
        assert f.to_local().to_bytes() == without_key_domains(local)
        assert [f.discard(k) for k in probes] == [local.discard(k) for k in probes]
        # a key removed above as often as it was added is surely absent now:
        # both sides then stop at it with KeyError, the keys before it removed
        assert _remove_many_outcome(f, keys[:50]) == _remove_many_outcome(local, keys[:50])
        assert f.count_many(probes) == [local.count(k) for k in probes]
        assert f.contains_many(probes) == list(local.contains_many(probes))
        got = f.to_local()
        assert got.to_bytes() == without_key_domains(local) and len(f) == len(local)
        with pytest.raises(IncompatibleFiltersError):
            f.merge_from(CountingBloomFilter(600, 0.01, counter_bits=bits, seed=4,
                                             layout="classic"))
        with pytest.raises(IncompatibleFiltersError, match="classic layout"):
            f.merge_from(CountingBloomFilter(600, 0.01, counter_bits=bits, seed=3))
        with pytest.raises(IncompatibleFiltersError):
            f.merge_from(BloomFilter(600, 0.01, seed=3))

    def test_refused_remove_changes_nothing(self, client: Any, name: str, bits: int,
                                            rng: Any) -> None:
        f = RedisCountingBloomFilter.create(client, name, 2000, 0.01, counter_bits=bits)
        keys = _keys(rng, 500)
        f.add_many(keys)
        before = f.to_local().to_bytes()
        absent = [k for k in _keys(rng, 200) if k not in f][:20]
        for k in absent:
            with pytest.raises(KeyError):
                f.remove(k)
        assert f.to_local().to_bytes() == before
        with pytest.raises(KeyError, match="index 3"):
            f.remove_many(keys[:3] + absent[:1] + keys[3:10])
        assert all(f.contains_many(keys[3:])) and len(f) == 497


class CountingLifecycleTests:
    def test_open_mismatch_and_delete(self, client: Any, name: str) -> None:
        f = RedisCountingBloomFilter.create(client, name, 1000, 0.01, counter_bits=8,
                                            secret=SECRET)
        with pytest.raises(FilterExistsError):
            RedisCountingBloomFilter.create(client, name, 1000)
        f.add("a")
        g = RedisCountingBloomFilter.open(client, name, secret=SECRET)
        assert g.count("a") == 1 and g.counter_bits == 8
        with pytest.raises(FilterMismatchError, match="wrong secret"):
            RedisCountingBloomFilter.open(client, name, secret=bytes(16))
        with pytest.raises(FilterMismatchError, match="does not hold"):
            RedisCountMinSketch.open(client, name)
        with pytest.raises(FilterMismatchError, match="does not hold"):
            RedisBloomFilter.open(client, name)
        assert f.delete()
        with pytest.raises(FilterNotFoundError):
            g.add("b")
        with pytest.raises(FilterNotFoundError):
            RedisCountingBloomFilter.open(client, name, secret=SECRET)
        with pytest.raises(ValueError, match="counter_bits"):
            RedisCountingBloomFilter.create(client, name, 1000, counter_bits=32)
        with pytest.raises(CapacityError, match="512 MiB"):
            RedisCountingBloomFilter.create(client, name, 5 * 10**8, 0.01, counter_bits=16)
        assert client.keys(f"*{name}*") == []


def _counting_worker(port: int, name: str, keys: list[str], out: Any) -> None:
    client = redis.Redis(host="127.0.0.1", port=port)
    f = RedisCountingBloomFilter.open(client, name)
    new = sum(f.add(k) for k in keys[:200])
    new += f.add_many(keys[200:])
    out.put(new)


def _cms_worker(port: int, name: str, keys: list[str], out: Any) -> None:
    client = redis.Redis(host="127.0.0.1", port=port)
    f = RedisCountMinSketch.open(client, name)
    for k in keys[:100]:
        f.add(k, 2)
    f.add_many(keys[100:])
    out.put(len(keys))


class CountersConcurrentProcessesTests:
    def test_processes_add_counting_and_sketch(self, server: RedisServer, client: Any,
                                               name: str) -> None:
        from bloomkit import CountingBloomFilter, CountMinSketch

        procs, per, universe = 6, 4000, 9000
        f = RedisCountingBloomFilter.create(client, name, universe, 0.01, counter_bits=8)
        s = RedisCountMinSketch.create(client, name + ":cms", 2000, 4)
        ctx = multiprocessing.get_context("fork")
        q = ctx.Queue()
        batches = [[f"item:{(i * 1500 + j) % universe}" for j in range(per)]
                   for i in range(procs)]
        workers = [ctx.Process(target=_counting_worker, args=(server.port, name, b, q))
                   for b in batches]
        workers += [ctx.Process(target=_cms_worker, args=(server.port, name + ":cms", b, q))
                    for b in batches]
        for w in workers:
            w.start()
        results = [q.get(timeout=120) for _ in workers]
        for w in workers:
            w.join(30)
            assert w.exitcode == 0
        keys = [f"item:{i}" for i in range(universe)]
        assert all(f.contains_many(keys))  # zero false negatives
        assert len(f) == procs * per
        local = CountingBloomFilter(universe, 0.01, counter_bits=8, layout="classic")
        for b in batches:
            local.add_many(b)
        got = f.to_local()
        # counters are order-free (saturating +1s), distinct depends on the order
        assert got.to_bytes()[128:] == local.to_bytes()[128:]
        assert sum(results) - procs * per <= universe  # was-new sum <= distinct keys
        truth: dict[str, int] = {}
        for b in batches:
            for j, k in enumerate(b):
                truth[k] = truth.get(k, 0) + (2 if j < 100 else 1)
        est = s.estimate_many(list(truth))
        assert all(e >= t for e, t in zip(est, truth.values(), strict=True))
        assert s.total == sum(truth.values())
        lcms = CountMinSketch(2000, 4)
        for b in batches:
            for k in b[:100]:
                lcms.add(k, 2)
            lcms.add_many(b[100:])
        assert s.to_local().to_bytes() == without_key_domains(lcms)  # plain update is order-free


@pytest.mark.parametrize("conservative", [False, True])
class SketchSameAsLocalTests:
    def test_adds_and_merges_match_a_local_sketch(self, client: Any, name: str,
                                                  conservative: bool, rng: Any) -> None:
        from bloomkit import CountMinSketch

        f = RedisCountMinSketch.create(client, name, 300, 5, seed=9, conservative=conservative)
        local = CountMinSketch(300, 5, seed=9, conservative=conservative)
        keys = [f"k{rng.randrange(2000)}" for _ in range(3000)] + _keys(rng, 100)
        counts = [rng.randrange(0, 5) for _ in keys]
        assert [f.add(k, c) for k, c in zip(keys[:60], counts, strict=False)] == \
            [local.add(k, c) for k, c in zip(keys[:60], counts, strict=False)]
        f.add_many(keys[60:], counts[60:])
        local.add_many(keys[60:], counts[60:])
        assert f.add("heavy", 2**40) == local.add("heavy", 2**40) == 2**32 - 1  # saturates
        assert f.to_local().to_bytes() == without_key_domains(local)
        other = CountMinSketch(300, 5, seed=9, conservative=conservative)
        other.add_many(keys[:500])
        other.add("heavy", 7)
        f.merge_from(other)
        local.merge(other, saturate=True)
        assert f.to_local().to_bytes() == without_key_domains(local)
        assert f.estimate_many(keys[:200]) == [local.estimate(k) for k in keys[:200]]
        assert f.total == local.total
        with pytest.raises(IncompatibleFiltersError):
            f.merge_from(CountMinSketch(301, 5, seed=9))
        with pytest.raises(ValueError, match="non-negative"):
            f.add("x", -1)
        with pytest.raises(ValueError, match="counter_bits must be 32"):
            RedisCountMinSketch.create(client, name + "64", 10, 2, counter_bits=64)


class SketchRowHashingTests:
    """#16.5: new Redis sketches use independent rows (row_hash 1 in their
    meta); a sketch created before has no row_hash field and keeps the
    double-hashed rows its counters were written with."""

    def test_new_and_old_sketches_keep_their_derivation(self, client: Any, name: str,
                                                        rng: Any) -> None:
        from bloomkit import CountMinSketch
        from bloomkit.redis._layout import meta_key_of as _meta_key

        keys = [f"k{rng.randrange(500)}" for _ in range(400)]
        new = RedisCountMinSketch.create(client, name, 200, 4, seed=5)
        assert new.row_hash == 1 and client.hget(_meta_key(name), "row_hash") == b"1"
        new.add_many(keys)
        local = CountMinSketch(200, 4, seed=5)
        local.add_many(keys)
        assert new.to_local().to_bytes() == without_key_domains(local)

        old_name = name + ":old"
        old = RedisCountMinSketch.create(client, old_name, 200, 4, seed=5)
        client.hdel(_meta_key(old_name), "row_hash")  # as written before #16.5
        old = RedisCountMinSketch.open(client, old_name)
        assert old.row_hash == 0
        old.add_many(keys)
        old_local = CountMinSketch(200, 4, seed=5, row_hash=0)
        old_local.add_many(keys)
        assert old.to_local().to_bytes() == without_key_domains(old_local)
        assert old.to_local().row_hash == 0
        assert old.estimate_many(keys[:50]) == [old_local.estimate(k) for k in keys[:50]]
        with pytest.raises(IncompatibleFiltersError, match="row_hash"):
            old.merge_from(local)
        assert RedisCountMinSketch.open(client, name).row_hash == 1


class CountersPersistenceAndKillTests:
    def test_counters_survive_a_restart(self, tmp_path: Path, rng: Any) -> None:
        require_redis()
        s = RedisServer(tmp_path, None, "--appendonly", "yes", "--appendfsync", "always").start()
        try:
            f = RedisCountingBloomFilter.create(s.client(), "pc", 3000, 0.01, counter_bits=16)
            m = RedisCountMinSketch.create(s.client(), "pm", 500, 3, conservative=True)
            keys = _keys(rng, 2000)
            f.add_many(keys)
            m.add_many(keys)
            before = f.to_local().to_bytes(), m.to_local().to_bytes()
            s.restart()
            g = RedisCountingBloomFilter.open(s.client(), "pc")
            n = RedisCountMinSketch.open(s.client(), "pm")
            assert (g.to_local().to_bytes(), n.to_local().to_bytes()) == before
            g.remove(keys[0])
            assert n.add(keys[0]) >= 2
        finally:
            s.stop()

    def test_a_killed_connection_leaves_counting_keys_whole(self, server: RedisServer,
                                                            name: str, rng: Any) -> None:
        from bloomkit import CountingBloomFilter

        admin = server.client()
        f = RedisCountingBloomFilter.create(admin, name, 200_000, 0.01)
        victim = RedisCountingBloomFilter.open(
            server.client(retry=no_retry(), client_name="bk-victim-c"), name)
        victim.chunk_size, victim.pipeline_depth = 50, 64
        keys = [f"k:{rng.getrandbits(64)}" for _ in range(60_000)]
        errors: list[BaseException] = []

        def run() -> None:
            try:
                victim.add_many(keys)
            except BaseException as exc:
                errors.append(exc)

        t = threading.Thread(target=run)
        t.start()
        deadline = time.monotonic() + 60
        while len(f) == 0 and time.monotonic() < deadline:
            time.sleep(0.005)
        killed = admin.client_kill_filter(_type="normal", skipme=True)
        t.join(120)
        assert killed >= 1
        assert len(errors) == 1 and isinstance(errors[0], RedisConnectionLost), errors
        # One connection runs its chunks in order: the applied keys are a prefix,
        # each key wholly (its k increments and the counters with them).
        got = f.to_local()
        n = len(got)
        assert 0 < n < len(keys)
        rebuilt = CountingBloomFilter(200_000, 0.01, layout="classic")
        rebuilt.add_many(keys[:n])
        assert got.to_bytes() == without_key_domains(rebuilt)
