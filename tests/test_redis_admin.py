"""clear(), copy(name) and the method names the local and Redis classes share
(issue #31 item 12; bloomkit/redis/_admin.py), against a real redis-server.

The local classes are the reference: a Redis structure cleared after some
adds holds the bytes of a local one cleared after the same adds; a copy holds
the source's bytes and lives on its own; the names one face has and the other
lacks are exactly the table in docs/redis.md ("Method names").
"""

from __future__ import annotations

import copy as _copy
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import bloomkit
from key_domains import without_key_domains
from redis_fixtures import RedisServer, require_redis

try:
    from bloomkit.redis import (
        FilterExistsError,
        FilterMismatchError,
        FilterNotFoundError,
        RedisBloomFilter,
        RedisCountingBloomFilter,
        RedisCountMinSketch,
        RedisFilterError,
        RedisSlidingBloomFilter,
    )
except ImportError:  # the fixture skips (or fails in CI) with the install hint
    pass

SECRET = bytes(range(16))
#: the layout new Redis sliding filters use (docs/redis.md)
SLIDING_LAYOUT = "blocked"
DOC = Path(__file__).resolve().parent.parent / "docs" / "redis.md"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    require_redis()
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    try:
        yield server.client()
    finally:
        server.stop()


def _makers() -> dict[str, tuple[Callable[[Any, str], Any], Callable[[], Any]]]:
    """structure -> (Redis create, the local structure of the same shape)."""
    return {
        "bloom": (lambda c, n: RedisBloomFilter.create(c, n, 2000, 0.01, seed=3),
                  lambda: bloomkit.BloomFilter(2000, 0.01, seed=3)),
        "blocked-sharded": (
            lambda c, n: RedisBloomFilter.create(c, n, 20_000, 0.01, layout="blocked",
                                                 shards=3, seed=3),
            lambda: bloomkit.BlockedBloomFilter(20_000, 0.01, seed=3)),
        "counting": (lambda c, n: RedisCountingBloomFilter.create(c, n, 2000, 0.01, seed=3),
                     lambda: bloomkit.CountingBloomFilter(2000, 0.01, seed=3,
                                                          layout="classic")),
        "cms": (lambda c, n: RedisCountMinSketch.create(c, n, 500, 4, seed=3),
                lambda: bloomkit.CountMinSketch(500, 4, seed=3)),
        "sliding": (lambda c, n: RedisSlidingBloomFilter.create(c, n, 1500, 0.01, seed=3),
                    lambda: bloomkit.SlidingBloomFilter(1500, 0.01, seed=3, layout=SLIDING_LAYOUT)),
        "sliding-keyed": (
            lambda c, n: RedisSlidingBloomFilter.create(c, n, 1500, 0.01, seed=3,
                                                        secret=SECRET),
            lambda: bloomkit.SlidingBloomFilter(1500, 0.01, seed=3, secret=SECRET,
                                              layout=SLIDING_LAYOUT)),
    }


STRUCTURES = list(_makers()) if bloomkit else []


def _fresh(client: Any, name: str) -> None:
    for cls in (RedisBloomFilter, RedisCountingBloomFilter, RedisSlidingBloomFilter):
        cls.delete_named(client, name)


@pytest.fixture
def names(client: Any, request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    a, b = f"adm:{request.node.name}:a", f"adm:{request.node.name}:b"
    _fresh(client, a)
    _fresh(client, b)
    yield a, b
    _fresh(client, a)
    _fresh(client, b)


def _open_same(f: Any, name: str) -> Any:
    return type(f).open(f.client, name, secret=f._secret)


# ---- clear ---------------------------------------------------------------------------


@pytest.mark.parametrize("structure", STRUCTURES)
def test_clear_is_the_local_clear(client: Any, names: tuple[str, str], structure: str,
                                  rng: Any) -> None:
    """After adds, clear(): the local bytes of a local clear() after the same
    adds; another handle keeps working on the emptied structure."""
    make, make_local = _makers()[structure]
    f = make(client, names[0])
    if "sliding" in structure:
        f = type(f).open(client, names[0], secret=f._secret)  # the same secret
    other = _open_same(f, names[0])
    local = make_local()
    keys = [rng.randrange(10**9) for _ in range(4000)]  # sliding: the ring shifts
    f.add_many(keys)
    local.add_many(keys)
    assert f.to_local().to_bytes() == without_key_domains(local)
    f.clear()
    local.clear()
    assert f.to_local().to_bytes() == without_key_domains(local)
    assert not any(other.contains_many(keys[-50:])) if hasattr(other, "contains_many") else True
    more = keys[:300] + [f"s{i}" for i in range(300)]
    other.add_many(more)
    local.add_many(more)
    assert f.to_local().to_bytes() == without_key_domains(local)


def test_clear_restarts_a_time_window_at_the_server_clock(client: Any,
                                                          names: tuple[str, str]) -> None:
    f = RedisSlidingBloomFilter.create(client, names[0], 10_000, 0.01, window=3600.0)
    f.add_many([f"k{i}" for i in range(100)])
    sec, usec = client.time()
    before = int(sec) * 1_000_000 + int(usec)
    f.clear()
    st = f.stats()
    start = int(client.hget(f"{{{names[0]}}}:n", "start"))
    assert start >= before
    assert {client.hget(f"{{{names[0]}}}:n", f"b{p}") for p in range(f.num_slices)} == {
        f"0 {start}".encode()}
    assert st["keys_in_window"] == 0 and len(f) == 0 and f.generation == 0
    assert not any(f.contains_many([f"k{i}" for i in range(100)]))
    assert f.add("k1") is True


def test_sliding_clear_under_a_live_hint_copy(client: Any, names: tuple[str, str],
                                              rng: Any) -> None:
    """Generation numbers repeat after a clear: a handle holding a copy of
    the frozen slices from before it (add_many's hints) must not answer
    from it.  Handle a adds (its copy warm), b clears, a adds the same keys
    again: every answer and byte is the local filter's."""
    a = RedisSlidingBloomFilter.create(client, names[0], 3000, 0.01, seed=5,
                                       layout="sliced")  # hints are layout 0's
    b = RedisSlidingBloomFilter.open(client, names[0])
    local = bloomkit.SlidingBloomFilter(3000, 0.01, seed=5, layout="sliced")
    a.chunk_size = 60
    pool = [f"p{i}" for i in range(2500)]
    for _ in range(4):
        batch = [rng.choice(pool) for _ in range(1500)]
        assert a.add_many(batch) == local.add_many(batch)
    b.clear()
    local.clear()
    # b brings the new ring to the generation of a's copy: a's next hints
    # name a generation the server is at, with the bits of before the clear
    i = 0
    while b._g_seen is None or b._g_seen < a._g_seen:
        assert b.add(f"fill{i}") == local.add(f"fill{i}")
        i += 1
    assert b._g_seen == a._g_seen
    for _ in range(4):
        batch = [rng.choice(pool) for _ in range(1500)]
        assert a.add_many(batch) == local.add_many(batch)
    assert a.to_local().to_bytes() == without_key_domains(local)


@pytest.mark.parametrize("structure", ["counting", "cms", "sliding"])
def test_clear_of_a_deleted_structure_does_not_recreate_it(
        client: Any, names: tuple[str, str], structure: str) -> None:
    f = _makers()[structure][0](client, names[0])
    type(f).delete_named(client, names[0])
    with pytest.raises(FilterNotFoundError):
        f.clear()
    assert client.keys(f"{{{names[0]}}}*") == []


# ---- copy ----------------------------------------------------------------------------


@pytest.mark.parametrize("structure", STRUCTURES)
def test_copy_is_the_same_state_and_independent(client: Any, names: tuple[str, str],
                                                structure: str, rng: Any) -> None:
    make, _ = _makers()[structure]
    f = make(client, names[0])
    if "keyed" in structure:
        f = type(f).open(client, names[0], secret=SECRET)
    keys = [rng.randrange(10**9) for _ in range(3000)]
    f.add_many(keys)
    g = f.copy(names[1])
    assert type(g) is type(f) and g.name == names[1]
    assert g.to_local().to_bytes() == f.to_local().to_bytes()
    assert g._gen != f._gen  # a handle on the source never writes the copy
    before = f.to_local().to_bytes()
    g.add_many([f"only-copy{i}" for i in range(200)])
    assert f.to_local().to_bytes() == before  # the source did not see the copy's adds
    assert g.to_local().to_bytes() != before
    if structure != "cms":
        assert all(g.contains_many([f"only-copy{i}" for i in range(200)]))
        assert all(g.contains_many(keys[-100:]))
    f.clear()
    assert g.to_local().to_bytes() != f.to_local().to_bytes()
    with pytest.raises(FilterExistsError):
        f.copy(names[1])
    with pytest.raises(ValueError):
        f.copy(names[0])
    with pytest.raises(TypeError, match="needs a name"):
        _copy.copy(f)


def test_copy_replace_removes_every_key_of_the_old_destination(
        client: Any, names: tuple[str, str]) -> None:
    """replace=True over a 3-shard Bloom filter: the copy (1 shard) is all
    that is left at the name, no orphan shard."""
    src = RedisCountingBloomFilter.create(client, names[0], 1000, 0.01)
    src.add_many(range(500))
    RedisBloomFilter.create(client, names[1], 30_000, 0.01, shards=3,
                            layout="blocked").add_many(range(100))
    with pytest.raises(FilterExistsError):
        src.copy(names[1])
    g = src.copy(names[1], replace=True)
    assert sorted(client.keys(f"{{{names[1]}*")) == sorted(
        [f"{{{names[1]}}}:{s}".encode() for s in ("meta", "ctr", "n")])
    assert g.to_local().to_bytes() == src.to_local().to_bytes()
    with pytest.raises(FilterMismatchError, match="structure='counting'"):
        RedisBloomFilter.open(client, names[1])


def test_copy_refuses_a_foreign_key_at_the_destination(client: Any,
                                                       names: tuple[str, str]) -> None:
    src = RedisCountMinSketch.create(client, names[0], 100, 3)
    client.set(f"{{{names[1]}}}:ctr", b"someone else's")
    with pytest.raises(FilterExistsError, match="ctr"):
        src.copy(names[1])
    assert client.get(f"{{{names[1]}}}:ctr") == b"someone else's"
    assert not client.exists(f"{{{names[1]}}}:meta")


def test_copy_of_a_deleted_source_is_refused(client: Any, names: tuple[str, str]) -> None:
    f = RedisSlidingBloomFilter.create(client, names[0], 1000, 0.01)
    RedisSlidingBloomFilter.delete_named(client, names[0])
    with pytest.raises(FilterNotFoundError):
        f.copy(names[1])
    assert client.keys(f"{{{names[1]}}}*") == []


def test_copy_is_refused_on_a_cluster_client(monkeypatch: pytest.MonkeyPatch) -> None:
    from bloomkit.redis import _admin

    class Handle:
        name = "x"
        client = object()

    monkeypatch.setattr(_admin, "is_cluster", lambda c: c is Handle.client)
    with pytest.raises(RedisFilterError, match="one script cannot span slots"):
        _admin.copy_structure(Handle(), "y", False, [], [])


# ---- method names ----------------------------------------------------------------------

#: operators that are methods of a filter (a name defined by object is not one)
_OPERATORS = {"__or__", "__and__", "__sub__", "__xor__", "__ior__", "__iand__", "__isub__",
              "__ixor__", "__le__", "__lt__", "__ge__", "__gt__", "__eq__", "__contains__",
              "__len__", "__iter__", "__copy__"}


def _method_names(cls: type) -> set[str]:
    out = set()
    for n in dir(cls):
        v = getattr(cls, n)
        if n.startswith("_"):
            if n in _OPERATORS and v is not getattr(object, n, None) and v is not None:
                out.add(n)
        elif callable(v) and not isinstance(v, type):
            out.add(n)
    return out


def _documented() -> dict[tuple[str, str], set[str]]:
    """(Redis class, 'local only' | 'Redis only') -> names, from the table in
    docs/redis.md's "Method names" section."""
    text = DOC.read_text()
    section = text.split("### Method names", 1)[1].split("\n#", 1)[0]
    out: dict[tuple[str, str], set[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if len(cells) != 4 or cells[0] not in ("local only", "Redis only"):
            continue
        found = {n.replace("\\|", "|") for n in re.findall(r"`([^`]+)`", cells[1])}
        for cls in re.findall(r"Redis\w+", cells[2]):
            out.setdefault((cls, cells[0]), set()).update(found)
    return out


def _pairs() -> list[tuple[type, type]]:
    return [(bloomkit.BloomFilter, RedisBloomFilter),
            (bloomkit.BlockedBloomFilter, RedisBloomFilter),
            (bloomkit.CountingBloomFilter, RedisCountingBloomFilter),
            (bloomkit.CountMinSketch, RedisCountMinSketch),
            (bloomkit.SlidingBloomFilter, RedisSlidingBloomFilter)]


def _operator_spelling(names: set[str]) -> set[str]:
    """__or__ is written `|` in the doc, and so on."""
    sym = {"__or__": "|", "__and__": "&", "__sub__": "-", "__xor__": "^", "__ior__": "|=",
           "__iand__": "&=", "__isub__": "-=", "__ixor__": "^=", "__le__": "<=",
           "__lt__": "<", "__ge__": ">=", "__gt__": ">", "__eq__": "=="}
    return {sym.get(n, n) for n in names}


@pytest.mark.parametrize("pair", range(5))
def test_method_names_differ_only_as_documented(client: Any, pair: int) -> None:
    """Every method name of a local class is on its Redis counterpart and
    the reverse, except the rows of docs/redis.md's table (each with its
    reason); clear, copy and contains are on both faces everywhere."""
    local, remote = _pairs()[pair]
    doc = _documented()
    ln, rn = _method_names(local), _method_names(remote)
    assert _operator_spelling(ln - rn) == doc.get((remote.__name__, "local only"), set())
    assert _operator_spelling(rn - ln) == doc.get((remote.__name__, "Redis only"), set())
    assert {"clear", "copy", "contains", "__copy__", "add", "add_many"} <= ln & rn
