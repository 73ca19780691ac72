"""bloomkit.redis.RedisSlidingBloomFilter against real redis-server processes (R26).

The server runs the algorithm of bk_sliding.h in Lua; these tests hold it to
the local SlidingBloomFilter (same bytes, same answers), to the window
guarantee under 8 concurrent writers, and to the server's clock alone.
They skip when this bloomkit has no SlidingBloomFilter.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import bloomkit
from key_domains import without_key_domains
from redis_fixtures import RedisServer, require_redis

if not hasattr(bloomkit, "SlidingBloomFilter"):
    pytest.skip("this bloomkit has no SlidingBloomFilter (the local filter the Redis one "
                "mirrors)", allow_module_level=True)

try:
    import redis

    from bloomkit.redis import (
        FilterExistsError,
        FilterMismatchError,
        FilterNotFoundError,
        RedisBloomFilter,
        RedisSlidingBloomFilter,
    )
except ImportError:  # the fixtures skip (or fail in CI) with the install hint
    redis = None

SlidingBloomFilter: Any = getattr(bloomkit, "SlidingBloomFilter", None)
SECRET = bytes(range(16))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    require_redis()
    s = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield s
    s.stop()


@pytest.fixture
def client(server: RedisServer) -> Any:
    return server.client()


@pytest.fixture
def name(request: pytest.FixtureRequest, client: Any) -> Iterator[str]:
    n = f"sl:{request.node.name}"
    RedisSlidingBloomFilter.delete_named(client, n)
    yield n
    RedisSlidingBloomFilter.delete_named(client, n)


def _answers(f: Any, keys: list[Any], path: str) -> list[bool]:
    """contains_many through the snapshot path or the script path."""
    f.snapshot_bytes_per_key = 10**9 if path == "snapshot" else 0
    return list(f.contains_many(keys))


class SameAsLocalTests:
    """The server runs bk_sliding.h's algorithm: same bytes, same answers."""

    @pytest.mark.parametrize("layout", ["blocked", "sliced"])
    @pytest.mark.parametrize("rate,secret", [(0.01, None), (0.001, SECRET)])
    def test_count_mode_is_byte_identical_through_many_shifts(
            self, client: Any, name: str, rng: Any, rate: float, secret: bytes | None,
            layout: str) -> None:
        f = RedisSlidingBloomFilter.create(client, name, 3000, rate, seed=7, secret=secret,
                                           layout=layout)
        f.chunk_size = 97  # shifts fall inside chunks, between their keys
        local = SlidingBloomFilter(3000, rate, seed=7, secret=secret, layout=layout)
        assert f.layout == local.layout == layout
        assert (f.num_hashes, f.generations, f.slice_bits) == (
            local.num_hashes, local.generations, local.slice_bits)
        keys: list[Any] = [rng.randrange(20_000) for _ in range(12_000)]  # repeats refresh
        keys += [f"s{rng.randrange(5000)}" for _ in range(6000)] + [b"\x00\xff", 2**63, -5]
        singles = [f.add(k) for k in keys[:400]]
        assert singles == [local.add(k) for k in keys[:400]]
        assert f.add_many(keys[400:]) == local.add_many(keys[400:])
        assert local.generation > 2 * (local.num_hashes + local.generations)  # ring went round
        snap = f.to_local()
        assert snap.to_bytes() == without_key_domains(local) and snap.key_types is None
        probe = keys[-4000:] + [f"absent{i}" for i in range(4000)]
        want = [bool(x) for x in local.contains_many(probe)]
        for path in ("snapshot", "script"):
            assert _answers(f, probe, path) == want, path
        assert [k in f for k in probe[:200]] == want[:200]
        assert len(f) == len(local)

    @pytest.mark.parametrize("rate,secret", [(0.01, None), (0.001, SECRET)])
    def test_hinted_adds_answer_like_the_local_filter(
            self, client: Any, name: str, rng: Any, rate: float, secret: bytes | None) -> None:
        """add_many's hints (the client's copy of the frozen slices answers
        their part of "was absent") give the local answers, batch by batch,
        at the hints' generation, at the next one, and through the full
        query when a second handle's adds leave them generations behind."""
        if not hasattr(RedisSlidingBloomFilter, "hint_bytes_per_key"):
            pytest.fail("no hinted adds")
        a = RedisSlidingBloomFilter.create(client, name, 3000, rate, seed=11, secret=secret,
                                           layout="sliced")  # hints are layout 0's
        b = RedisSlidingBloomFilter.open(client, name, secret=secret)
        local = SlidingBloomFilter(3000, rate, seed=11, secret=secret, layout="sliced")
        a.chunk_size = b.chunk_size = 60  # G = 94: shifts inside most trips
        # repeats within the window, so keys are present through every path:
        # young bits, runs across young and frozen slices, frozen runs alone
        pool = [f"p{i}" for i in range(2500)]
        total = 0
        for step in range(60):
            batch = [rng.choice(pool) for _ in range(rng.randrange(20, 400))]
            f = b if step % 5 == 4 else a  # b: hints stale by many generations
            assert f.add_many(batch) == local.add_many(batch), step
            total += len(batch)
        assert a.to_local().to_bytes() == without_key_domains(local)
        assert a._hinted[0] > 1000 and a._hinted[1] > 100  # both hinted generations
        assert sum(a._hinted) + sum(b._hinted) < total - 100  # and the full query too
        probe = pool + [f"absent{i}" for i in range(2000)]
        assert _answers(a, probe, "script") == [bool(x) for x in local.contains_many(probe)]

    def test_hint_numbers_reach_the_script_as_written(self, client: Any, name: str) -> None:
        from bloomkit.redis._sliding_records import decimal_fields

        np = pytest.importorskip("numpy")
        values = [0, 1, 9, 10, 99, 100, 9999, 10_000, 10**8 - 1, 10**8, 2**32 - 1, 10**10 - 1]
        text = decimal_fields(np.array(values, dtype=np.uint64))
        got = client.eval("local t = {} for x in string.gmatch(ARGV[1], ' +0*(%d+)') do "
                          "t[#t + 1] = x end return t", 0, text)
        assert got == [str(v).encode() for v in values]

    def test_batch_positions_are_the_local_derivation(self, client: Any, name: str,
                                                      rng: Any) -> None:
        f = RedisSlidingBloomFilter.create(client, name, 10**6, 0.001, seed=3, secret=SECRET,
                                           layout="sliced")
        local = SlidingBloomFilter(10**6, 0.001, seed=3, secret=SECRET, layout="sliced")
        keys: list[Any] = [rng.getrandbits(64) for _ in range(300)] + ["é", b"", 0, -1]
        per_key = b"".join(
            f._pack(*[(p * f.slice_bits + q) ^ 7
                      for p, q in enumerate(local._slice_positions(k))]) for k in keys)
        assert f._records(keys) == per_key  # numpy batch path (when installed)
        assert f._records(keys[:10]) == per_key[:10 * 4 * f.num_slices]  # per-key path

    def test_blocked_records_are_the_local_derivation(self, client: Any, name: str,
                                                      rng: Any) -> None:
        """Layout 1's record of a key: its block's byte offset and its bit in
        every lane, from bk_sliding_block / bk_sliding_lane_pos (what
        _slice_positions gives: block * 32 + the lane's bit)."""
        import struct

        f = RedisSlidingBloomFilter.create(client, name, 10**6, 0.01, seed=3, secret=SECRET,
                                           layout="blocked")
        local = SlidingBloomFilter(10**6, 0.01, seed=3, secret=SECRET, layout="blocked")
        keys: list[Any] = [rng.getrandbits(64) for _ in range(300)] + ["é", b"", 0, -1]
        want = b""
        for k in keys:
            q = local._slice_positions(k)
            assert len({x // 32 for x in q}) == 1  # one block a key
            want += struct.pack("<I", q[0] // 32 * 128) + bytes(x % 32 for x in q)
        assert f._records(keys) == want  # numpy batch path (when installed)
        assert f._records(keys[:10]) == want[:10 * (4 + f.num_slices)]  # per-key path

    def test_time_mode_blocked_is_byte_identical_through_time_shifts(
            self, client: Any, name: str, rng: Any) -> None:
        """Layout 1 in time mode: after each batch (one script call) the
        server's state is the local filter's after the same keys at a time
        of the same generation (the script's TIME is between two TIMEs read
        around the call; a batch whose two reads straddle a generation
        boundary resyncs instead).  Sleeps cross generations, so pending
        shifts of 1 to several lanes happen between batches."""
        # capacity / l = 17,391 adds a generation of 0.1 s: no early shift, which
        # restarts the generation at the add's own time (the script's TIME, which
        # the local filter cannot know).  At 40,000 (1,739) back-to-back batches
        # shifted early and the bytes differed (BLOOMKIT_TEST_SEED=492897113).
        f = RedisSlidingBloomFilter.create(client, name, 400_000, 0.01, window=2.3, seed=9,
                                           layout="blocked")
        f.chunk_size = 10_000  # a batch is one script call
        now = [0.0]
        local = f.to_local(clock=lambda: now[0])
        D = -(-f.window_us // f.generations)
        start = int(client.hget(f._hash_key, "start"))

        def server_us() -> int:
            sec, usec = client.time()
            return int(sec) * 1_000_000 + int(usec)

        compared = i = 0
        # At least 40 batches, and on until the server's clock has gone round the
        # ring (num_slices generations, and a last sleep and batch to spare): 40 random
        # sleeps alone sum to 2.5-7 s, and a short draw left the ring unturned
        # (generation 26 of 32 with BLOOMKIT_TEST_SEED=3969863021).
        # And on until 20 batches were compared: on a loaded machine a batch's two
        # TIME reads straddle a generation boundary more often (no comparison).
        while i < 40 or compared < 20 or server_us() - start <= (f.num_slices + 8) * D:
            i += 1
            assert i <= 400
            batch = [rng.randrange(10**6) for _ in range(rng.randrange(50, 400))]
            t0 = server_us()
            f.add_many(batch)
            t1 = server_us()
            if (t0 - start) // D == (t1 - start) // D:
                now[0] = (t0 + 0.5) / 1e6
                local.add_many(batch)
                assert f.to_local().to_bytes() == without_key_domains(local), i
                compared += 1
            else:  # the script's generation is unknown: take the server's state
                local = f.to_local(clock=lambda: now[0])
            time.sleep(rng.choice([0.0, 0.05, 0.12, 0.3]))
        assert compared >= 20
        assert f.early_shifts == 0
        assert local.generation > f.num_slices  # the ring went round

    def test_a_layout_0_key_of_before_layout_1_still_works(
            self, client: Any, name: str, rng: Any) -> None:
        """A key written before layout 1 existed has no 'layout' in its state
        hash: it reads as layout 0 and answers (and stores) as before."""
        f = RedisSlidingBloomFilter.create(client, name, 3000, 0.01, seed=4, layout="sliced")
        client.hdel(f._hash_key, "layout")
        g = RedisSlidingBloomFilter.open(client, name)
        assert g.layout == "sliced" and g.layout_version == 0
        local = SlidingBloomFilter(3000, 0.01, seed=4, layout="sliced")
        keys = [rng.randrange(10**5) for _ in range(8000)]
        assert g.add_many(keys) == local.add_many(keys)
        assert g.to_local().to_bytes() == without_key_domains(local)
        probe = keys[-500:] + [f"x{i}" for i in range(500)]
        assert _answers(g, probe, "script") == [bool(x) for x in local.contains_many(probe)]

    def test_a_damaged_meta_layout_version_is_corrupt(self, client: Any, name: str) -> None:
        from bloomkit.redis import CorruptStateError

        RedisSlidingBloomFilter.create(client, name, 1000, 0.01)
        for bad in ("7", "", "1 "):
            client.hset(f"{{{name}}}:meta", "layout_version", bad)
            with pytest.raises(CorruptStateError, match="layout_version") as e:
                RedisSlidingBloomFilter.open(client, name)
            assert isinstance(e.value, bloomkit.FormatError)
        # the meta says 0 of a layout-1 shape (slice_bits not a multiple of
        # 512): refused at open (before: the C constructor's bad-shape path
        # read its reason before setting it and crashed the process)
        client.hset(f"{{{name}}}:meta", "layout_version", "0")
        with pytest.raises(FilterMismatchError, match="damaged metadata"):
            RedisSlidingBloomFilter.open(client, name)

    @pytest.mark.parametrize("k,l,m,layout", [
        (0, 23, 1024, 0), (9, 0, 1024, 0), (9, 23, 2112, 0), (9, 23, 0, 0),
        (9, 24, 1024, 1), (9, 23, 100, 1), (9, 23, 1024, 7)])
    def test_a_stored_shape_the_core_refuses_is_a_value_error(
            self, k: int, l: int, m: int, layout: int) -> None:  # noqa: E741
        """The handle builds its position calculator from the meta's shape
        (sliding.py, _new_local): a bad one is a ValueError naming the rule.
        Before: the C constructor read its reason before the shape check set
        it (one call's two arguments) and crashed the process on every
        refused shape."""
        from bloomkit.redis.sliding import _new_local

        with pytest.raises(ValueError, match="sliding"):
            _new_local(SlidingBloomFilter, k, l, m, 1000, 0.01, 0, None, layout=layout)

    def test_a_state_of_the_other_layout_is_refused_by_every_script(
            self, client: Any, name: str) -> None:
        """Meta and state say layout 0 over layout-1 bytes of a shape both
        accept (S = 32, slice_bits a multiple of 512: the same length): the
        state's layout field, set at creation, is what the scripts check."""
        from bloomkit.redis import CorruptStateError

        f = RedisSlidingBloomFilter.create(client, name, 16_128, 0.01, layout="blocked")
        assert (f.num_slices, f.slice_bits % 512) == (32, 0)
        f.add_many(range(100))
        client.hset(f"{{{name}}}:meta", "layout_version", "0")
        g = RedisSlidingBloomFilter.open(client, name)  # the meta alone looks sound
        for op in (lambda: g.add("a"), lambda: "a" in g, g.to_local,
                   lambda: g.contains_many(["a"] * 10**4)):
            with pytest.raises(CorruptStateError, match="layout"):
                op()

    def test_time_mode_to_local_agrees_on_every_key_of_a_sample(
            self, client: Any, name: str) -> None:
        f = RedisSlidingBloomFilter.create(client, name, 50_000, 0.01, window=1.0)
        keys = []
        for i in range(16):  # over 1.6 windows: many time shifts, keys of every age
            batch = [f"e{i}:{j}" for j in range(200)]
            f.add_many(batch)
            keys += batch
            time.sleep(0.1)
        probe = keys + [f"absent{i}" for i in range(2000)]
        # the server's answers between two snapshots (each read with the
        # server's TIME in one MULTI): every key the two snapshots agree on,
        # the server answers the same; keys expiring in between may go
        # either way
        before = [bool(x) for x in f.to_local().contains_many(probe)]
        server = _answers(f, probe, "script")
        local = f.to_local()  # its clock is stopped at the server's time of the read
        after = [bool(x) for x in local.contains_many(probe)]
        stable = [i for i in range(len(probe)) if before[i] == after[i]]
        assert len(stable) >= 2000  # the absent keys at least (no timing assumed)
        assert [server[i] for i in stable] == [after[i] for i in stable]
        assert 0 < sum(after[:len(keys)]) < len(keys)  # old keys expired, recent ones kept
        stats = local.stats()
        assert stats["mode"] == "time" and stats["early_shifts"] == 0
        assert stats["generation"] + stats["pending_shifts"] > f.num_slices

    def test_time_mode_server_and_snapshot_agree(self, client: Any, name: str) -> None:
        f = RedisSlidingBloomFilter.create(client, name, 200_000, 0.01, window=30)
        keys = [f"k{i}" for i in range(3000)]
        assert f.add_many(keys) >= 2950  # all new, but for false positives
        probe = keys + [f"absent{i}" for i in range(3000)]
        assert _answers(f, probe, "snapshot") == _answers(f, probe, "script")
        assert all(_answers(f, keys, "script"))


def _writer(port: int, name: str, idx: int, window: float | None, out: Any) -> None:
    """Add this writer's keys in batches; after each batch check the batches
    the guarantee covers.  Puts (missing keys, batches checked) on out."""
    import redis as redis_mod

    from bloomkit.redis import RedisSlidingBloomFilter as R

    client = redis_mod.Redis(host="127.0.0.1", port=port)
    f = R.open(client, name)
    f.chunk_size = 40
    state = f"{{{name}}}:n"
    covered = f.generations * f.generation_length  # l G insertions (count mode)
    missing = checked = 0
    history: list[tuple[float, int, list[str]]] = []
    for b in range(25):
        batch = [f"w{idx}:b{b}:{j}" for j in range(80)]
        sent, before = time.monotonic(), int(client.hget(state, "inserted"))
        f.add_many(batch)
        history.append((sent, before, batch))
        for when, ins0, keys in history[-6:]:
            got = f.contains_many(keys)
            done, ins1 = time.monotonic(), int(client.hget(state, "inserted"))
            # count mode: present while at most l G insertions (the server's
            # counter) followed; time mode: while the window has not passed
            # since the add was sent (server and client clocks both measure
            # the elapsed real time on this machine)
            if (ins1 - ins0 <= covered) if window is None else (done - when < 0.8 * window):
                missing += got.count(False)
                checked += 1
    out.put((missing, checked))


class ConcurrentWritersTests:
    """8 processes add through many shifts (each made by whichever script finds
    it due); no key inside the window is ever missing."""

    @pytest.mark.parametrize("window", [None, 0.6])
    def test_eight_writers_lose_no_key_inside_the_window(
            self, server: RedisServer, client: Any, name: str, window: float | None) -> None:
        # time mode: a capacity large enough for no early shift
        f = RedisSlidingBloomFilter.create(client, name, 4000 if window is None else 40_000,
                                           0.01, window=window)
        ctx = multiprocessing.get_context("spawn")
        out = ctx.Queue()
        procs = [ctx.Process(target=_writer, args=(server.port, name, i, window, out))
                 for i in range(8)]
        for p in procs:
            p.start()
        results = [out.get(timeout=600) for _ in procs]
        for p in procs:
            p.join(timeout=60)
            assert p.exitcode == 0
        assert sum(m for m, _ in results) == 0
        assert all(c > 0 for _, c in results)
        stats = f.stats()
        if window is None:
            # 16,000 adds (some repeats) at G = 174 (blocked; 125 sliced): over
            # 70 shifts, each made exactly once
            assert stats["generation"] >= 0.75 * 16_000 / f.generation_length
            assert stats["inserted"] <= 16_000
        else:
            assert stats["early_shifts"] == 0
            assert stats["generation"] + stats["pending_shifts"] > f.num_slices


    def test_an_early_shift_warns_and_is_counted(self, client: Any, name: str) -> None:
        f = RedisSlidingBloomFilter.create(client, name, 320, 0.01, window=60)  # G = 14
        with pytest.warns(bloomkit.SlidingWindowWarning, match="larger capacity"):
            f.add_many([f"k{i}" for i in range(100)])
        stats = f.stats()
        assert stats["early_shifts"] >= 100 // f.generation_length - 1
        assert stats["shortened_by"] > 0
        assert f.early_shifts == stats["early_shifts"]
        # a handle opened later warns about its own early shifts, not older ones
        assert RedisSlidingBloomFilter.open(client, name)._early_seen == stats["early_shifts"]


class ServerClockTests:
    """Time mode uses the server's TIME only: a client clock an hour off
    changes nothing."""

    @pytest.mark.parametrize("skew", [3600.0, -3600.0])
    def test_a_skewed_client_clock_changes_nothing(
            self, client: Any, name: str, monkeypatch: pytest.MonkeyPatch, skew: float) -> None:
        f = RedisSlidingBloomFilter.create(client, name, 20_000, 0.01, window=0.5)
        old = [f"old{i}" for i in range(500)]
        f.add_many(old)
        # old is past the forget bound, (l + k) generations of window / l
        time.sleep(0.5 * f.num_slices / f.generations + 0.1)
        real_time, real_ns = time.time, time.time_ns
        monkeypatch.setattr(time, "time", lambda: real_time() + skew)
        monkeypatch.setattr(time, "time_ns", lambda: real_ns() + int(skew * 1e9))
        g0 = f.generation
        new = [f"new{i}" for i in range(500)]
        assert f.add_many(new) >= 490
        absent = [f"absent{i}" for i in range(2000)]
        for path in ("snapshot", "script"):
            assert all(_answers(f, new, path)), path  # +1 h would have expired them
            assert sum(_answers(f, old, path)) < 25, path  # -1 h would have kept them
            assert sum(_answers(f, absent, path)) < 60, path
        # the shifts made are the server's second's worth (about 50 of 1/32
        # window), not an hour's worth (7,200 windows)
        assert 0 < f.generation - g0 < 3 * f.num_slices
        stats = f.stats()
        assert stats["early_shifts"] == 0 and stats["pending_shifts"] < f.num_slices
        # a local filter on the skewed clock answers differently: that is
        # what the server's clock protects against
        if skew > 0:
            local = f.to_local(clock=time.time)
            assert not any(local.contains_many(new))


class BadInputTests:
    def test_damaged_payload_is_refused_at_open(self, client: Any, name: str) -> None:
        # the check _MetaHandle shares with the counter handles
        for cls, attr in ((RedisSlidingBloomFilter, "_bits_key"),
                          (bloomkit.redis.RedisCountingBloomFilter, "_ctr_key")):
            f = cls.create(client, name + cls.__name__, 1000, 0.01)
            client.set(getattr(f, attr), b"short")
            with pytest.raises(FilterMismatchError, match=r"\(5 bytes, expected \d+\) or from "
                                                          r"another creation: it is damaged"):
                cls.open(client, name + cls.__name__)

    def test_bad_parameters(self, client: Any, name: str) -> None:
        with pytest.raises(TypeError):
            RedisSlidingBloomFilter.create(client, name, "1000")  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            RedisSlidingBloomFilter.create(client, name, 0)
        with pytest.raises(ValueError):
            RedisSlidingBloomFilter.create(client, name, 1000, 1.5)
        with pytest.raises(ValueError):
            RedisSlidingBloomFilter.create(client, name, 1000, 0.01, window=-1)
        with pytest.raises(ValueError):
            RedisSlidingBloomFilter.create(client, name, 1000, 0.01, window=float("nan"))
        with pytest.raises(TypeError):
            RedisSlidingBloomFilter.create(client, name, 1000, 0.01, window="1s")  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            RedisSlidingBloomFilter.create(client, "a{b}", 1000)
        with pytest.raises(TypeError):
            RedisSlidingBloomFilter.create(client, name, 1000, secret="not bytes")  # type: ignore[arg-type]
        with pytest.raises(bloomkit.CapacityError):
            RedisSlidingBloomFilter.create(client, name, 2**40, 0.01)
        assert client.exists(f"{{{name}}}:meta") == 0  # nothing written by a refused create

    def test_decode_responses_client_is_refused(self, server: RedisServer, name: str) -> None:
        with pytest.raises(ValueError, match="decode_responses"):
            RedisSlidingBloomFilter.create(server.client(decode_responses=True), name, 1000)

    def test_bad_keys(self, client: Any, name: str) -> None:
        f = RedisSlidingBloomFilter.create(client, name, 1000)
        with pytest.raises(TypeError):
            f.add(1.5)
        with pytest.raises(TypeError):
            f.add_many("abc")
        with pytest.raises(TypeError):
            f.contains_many(b"abc")
        with pytest.raises(TypeError):
            f.add_many([1, object()])
        with pytest.raises(TypeError):
            _ = [None] in f  # type: ignore[operator]
        assert f.add_many([]) == 0 and f.contains_many([]) == []

    def test_open_errors(self, client: Any, name: str) -> None:
        with pytest.raises(FilterNotFoundError):
            RedisSlidingBloomFilter.open(client, name)
        RedisSlidingBloomFilter.create(client, name, 1000, secret=SECRET)
        with pytest.raises(FilterExistsError):
            RedisSlidingBloomFilter.create(client, name, 1000)
        with pytest.raises(FilterMismatchError, match="secret"):
            RedisSlidingBloomFilter.open(client, name)
        with pytest.raises(FilterMismatchError, match="wrong secret"):
            RedisSlidingBloomFilter.open(client, name, secret=bytes(16))
        with pytest.raises(FilterMismatchError, match="differs"):
            RedisSlidingBloomFilter.open_or_create(client, name, 2000, secret=SECRET)
        RedisSlidingBloomFilter.open_or_create(client, name, 1000, secret=SECRET)
        # a later bloomkit's layout: named as such (one meta check for every structure)
        client.hset(f"{{{name}}}:meta", "format", "bloomkit-redis/9")
        with pytest.raises(FilterMismatchError, match="uses Redis layout 'bloomkit-redis/9'"):
            RedisSlidingBloomFilter.open(client, name, secret=SECRET)

    def test_a_bloom_filter_is_not_a_sliding_one(self, client: Any, name: str) -> None:
        RedisBloomFilter.create(client, name, 1000)
        with pytest.raises(FilterMismatchError):
            RedisSlidingBloomFilter.open(client, name)
        RedisBloomFilter.delete_named(client, name)

    def test_deleted_under_a_live_handle(self, client: Any, name: str) -> None:
        f = RedisSlidingBloomFilter.create(client, name, 1000, window=10)
        f.add("x")
        RedisSlidingBloomFilter.delete_named(client, name)
        for call in (lambda: f.add("y"), lambda: "x" in f, lambda: f.to_local(),
                     lambda: f.contains_many(["x"] * 10), lambda: len(f)):
            with pytest.raises(FilterNotFoundError):
                call()
        # and a filter created again under the name is not the handle's
        RedisSlidingBloomFilter.create(client, name, 1000, window=10)
        with pytest.raises(FilterNotFoundError):
            f.add("y")
        assert client.strlen(f"{{{name}}}:bits") == RedisSlidingBloomFilter.open(
            client, name).payload_len

    def test_damaged_state_is_a_clean_error(self, client: Any, name: str) -> None:
        f = RedisSlidingBloomFilter.create(client, name, 1000)
        client.hset(f"{{{name}}}:n", "b3", "garbage")
        with pytest.raises(FilterMismatchError):
            f.to_local()
        client.hset(f"{{{name}}}:meta", "k", "x")
        with pytest.raises(FilterMismatchError, match="damaged"):
            RedisSlidingBloomFilter.open(client, name)


def test_redis_sliding_is_exported() -> None:
    import bloomkit.redis

    assert "RedisSlidingBloomFilter" in bloomkit.redis.__all__
    assert Path(bloomkit.redis.__file__).name == "__init__.py"
