"""ScalableBloomFilter: API, growth and the compound bound (R4), model-based (R1),
size sweep (R2), goldens (R8), pickling (R21) and hostile input (R12-R15),
including crafted chains (R15)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import pickle
import random
import struct
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import bloomkit
import kind_list
from bloomkit import (
    BloomFilter,
    CapacityError,
    FormatError,
    IncompatibleFiltersError,
    ScalableBloomFilter,
    design,
)
from hostile_helpers import (
    HEADER_INT_FIELDS,
    bit_flips,
    every_byte_value,
    load_clean,
    mutate_fields,
    reseal,
    truncations_and_trailing,
)
from key_domains import without_key_domains

np = pytest.importorskip("numpy")

GOLDEN = Path(__file__).parent / "format" / "golden"
LAYOUTS = ["classic", "blocked"]


@pytest.fixture(params=LAYOUTS)
def layout(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


class ApiTests:
    def test_links_follow_the_scheme(self, layout: str) -> None:
        f = ScalableBloomFilter(100, 0.01, layout=layout, growth=3, tightening=0.8)
        f.add_many(range(5000))
        assert f.num_links == len(f.links) >= 4
        for i, link in enumerate(f.links):
            assert link.capacity == 100 * 3**i
            assert link.error_rate == pytest.approx(0.01 * 0.2 * 0.8**i, rel=1e-12)
            d = design(link.capacity, link.error_rate, layout)
            assert (link.num_bits, link.num_hashes) == (d.num_bits, d.num_hashes)
            if i < f.num_links - 1:
                assert link.num_keys == link.capacity  # older links are full
        assert sum(link.num_keys for link in f.links) == len(f)
        assert f.capacity == sum(link.capacity for link in f.links)
        assert f.num_bits == sum(link.num_bits for link in f.links)
        assert f.state_nbytes == len(f.to_bytes())

    def test_present_keys_are_not_re_added(self, layout: str) -> None:
        f = ScalableBloomFilter(10, 0.01, layout=layout)
        assert f.add("x") is True and f.add("x") is False and len(f) == 1
        f.add_many(range(100))
        assert f.add(5) is False and f.add_many(range(100)) == 0
        assert "x" in f and all(f.contains_many(range(100)))

    def test_union_of_identical_parameters(self, layout: str) -> None:
        a = ScalableBloomFilter(50, 0.01, layout=layout, seed=3)
        b = ScalableBloomFilter(50, 0.01, layout=layout, seed=3)
        a.add_many(range(0, 100))
        b.add_many(range(1000, 1500))
        u = a | b
        assert u.num_links == max(a.num_links, b.num_links)
        assert all(u.contains_many(list(range(100)) + list(range(1000, 1500))))
        assert u == a.union(b) == b.union(a)
        c = a.copy()
        c |= b
        assert c == u
        u.add_many(range(5000, 6000))  # a union keeps growing normally
        assert all(u.contains_many(range(5000, 6000)))

    def test_mismatches_raise(self, layout: str) -> None:
        a = ScalableBloomFilter(50, 0.01, layout=layout)
        other_layout = "blocked" if layout == "classic" else "classic"
        for other, what in [
            (ScalableBloomFilter(50, 0.01, layout=other_layout), "layouts"),
            (ScalableBloomFilter(50, 0.02, layout=layout), "error_rate"),
            (ScalableBloomFilter(60, 0.01, layout=layout), "initial_capacity"),
            (ScalableBloomFilter(50, 0.01, layout=layout, growth=4), "growth"),
            (ScalableBloomFilter(50, 0.01, layout=layout, tightening=0.9), "tightening"),
            (ScalableBloomFilter(50, 0.01, layout=layout, seed=1), "seeds"),
            (ScalableBloomFilter(50, 0.01, layout=layout, secret=b"s" * 16), "hashing"),
        ]:
            with pytest.raises(IncompatibleFiltersError, match=what):
                a | other
        with pytest.raises(TypeError):
            a | BloomFilter(10, 0.1)  # type: ignore[operator]

    def test_limits_are_clear_errors(self) -> None:
        # blocked links stop at the 1e-7 floor: 0.005 * 0.5**i < 1e-7 from i = 16
        f = ScalableBloomFilter(1, 0.01, layout="blocked")
        with pytest.raises(CapacityError, match="floor"):
            f.add_many(range(10**6))
        n = len(f)
        assert f.num_links == 16 and all(f.contains_many(range(n)))
        with pytest.raises(ValueError, match="MAX_NUM_BITS"):
            ScalableBloomFilter(2**47, 0.5)
        with pytest.raises(ValueError, match="growth"):
            ScalableBloomFilter(10, growth=1)
        with pytest.raises(ValueError, match="growth"):
            ScalableBloomFilter(10, growth=17)
        with pytest.raises(TypeError, match="growth"):
            ScalableBloomFilter(10, growth=2.0)  # type: ignore[arg-type]
        for bad in (0.0, 1.0, -0.5, math.nan, math.inf):
            with pytest.raises(ValueError, match="tightening"):
                ScalableBloomFilter(10, tightening=bad)
        with pytest.raises(TypeError, match="tightening"):
            ScalableBloomFilter(10, tightening="0.5")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="layout"):
            ScalableBloomFilter(10, layout="cuckoo")
        with pytest.raises(ValueError):
            ScalableBloomFilter(10, 1e-8, layout="blocked")
        with pytest.raises(ValueError, match="seed"):
            ScalableBloomFilter(10, seed=-1)

    @pytest.mark.parametrize("capacity", [0, 1, 2**32, 2**63, 2**64 - 1, -1])
    @pytest.mark.parametrize(
        "error_rate", [0, 1, -0.0, math.nan, math.inf, -math.inf, 1e-300, 0.9999999999999999]
    )
    def test_constructor_extremes(self, capacity: int, error_rate: float) -> None:
        try:
            f = ScalableBloomFilter(capacity, error_rate)
        except (ValueError, TypeError):
            return
        # 2**32 keys at 0.9999999999999999: link 0 has rate 0.5, 1.44 bits/key
        # (untouched calloc'ed pages); everything else accepted is tiny.
        assert f.nbytes <= 2**30

    def test_estimates_clear_repr(self, layout: str) -> None:
        f = ScalableBloomFilter(1000, 0.01, layout=layout)
        f.add_many(range(20_000))
        assert f.estimate_count() == pytest.approx(len(f), rel=0.05)
        assert 0 < f.estimate_error_rate() < 0.012
        r = repr(f)
        assert "ScalableBloomFilter" in r and "num_links=" in r
        f.clear()
        assert len(f) == 0 and f.num_links == 1 and 5 not in f
        assert f == ScalableBloomFilter(1000, 0.01, layout=layout)
        with pytest.raises(TypeError):
            hash(f)

    def test_secret_and_key(self) -> None:
        secret = bytes(range(16))
        f = ScalableBloomFilter(10, 0.01, secret=secret, key=str.lower)
        f.add_many([f"K{i}" for i in range(100)])
        assert f.keyed and "k5" in f and f.num_links > 1
        data = f.to_bytes()
        assert secret not in data
        g = ScalableBloomFilter.from_bytes(data, secret=secret, key=str.lower)
        assert g == f and "K7" in g
        with pytest.raises(ValueError, match="keyed"):
            ScalableBloomFilter.from_bytes(data)
        with pytest.raises(TypeError, match="pickle"):
            pickle.dumps(f)

    def test_buffers_are_read_only_in_place(self) -> None:
        f = ScalableBloomFilter(10, 0.01)
        f.add_many(range(100))
        buf = bytearray(f.to_bytes())
        ro = ScalableBloomFilter._from_buffer(buf)
        assert ro.mapped and not ro.writable and all(ro.contains_many(range(100)))
        assert ro == f
        with pytest.raises(TypeError, match="read-only"):
            ro.add("new")
        with pytest.raises(TypeError, match="cannot be mapped for writing"):
            ScalableBloomFilter._from_buffer(buf, writable=True)
        ro._detach()
        assert not ro.mapped and ro == f

    def test_save_load_pickle(self, tmp_path: Path, layout: str) -> None:
        f = ScalableBloomFilter(20, 0.01, layout=layout, seed=9)
        f.add_many(range(300))
        f.save(tmp_path / "s.bkf")
        g = bloomkit.load(tmp_path / "s.bkf")
        assert type(g) is ScalableBloomFilter and g == f and len(g) == len(f)
        for proto in range(2, pickle.HIGHEST_PROTOCOL + 1):
            h = pickle.loads(pickle.dumps(f, protocol=proto))
            assert h == f and h.num_links == f.num_links
        with pytest.raises(FormatError, match="not the expected"):
            BloomFilter.from_bytes(f.to_bytes())
        g.add_many(range(300, 1000))  # a loaded chain keeps growing
        assert all(g.contains_many(range(1000)))


# ---- R4: 100x growth keeps the compound bound ------------------------------------


@pytest.mark.parametrize(
    ("p", "growth", "tightening"), [(0.01, 2, 0.5), (0.001, 2, 0.5), (0.01, 4, 0.8)]
)
def test_compound_rate_after_100x_growth(layout: str, p: float, growth: int,
                                         tightening: float) -> None:
    n0 = 1000
    f = ScalableBloomFilter(n0, p, growth=growth, tightening=tightening, layout=layout, seed=7)
    gen = np.random.default_rng(int(1 / p) + growth)
    keys = gen.integers(0, 2**62, 100 * n0, dtype=np.int64)
    f.add_many(keys)
    assert f.contains_many(keys).all()
    assert f.num_links >= 3
    probes_n = int(max(1_000_000, 100 / p))
    probes = gen.integers(2**62, 2**63 - 1, probes_n, dtype=np.int64)
    observed = int(f.contains_many(probes).sum()) / probes_n
    assert observed <= 1.05 * p + 5 * math.sqrt(p / probes_n), observed


# ---- R2: size sweep ----------------------------------------------------------------


def test_size_sweep_has_no_false_negatives(rng: random.Random) -> None:
    sizes = list(range(1, 11))
    n = 10.0
    while n * 1.25 <= 1_000_000:
        n *= 1.25
        sizes.append(int(n))
    for i, n_keys in enumerate(sizes):
        f = ScalableBloomFilter(max(1, n_keys // 100), 0.01, layout=LAYOUTS[i % 2])
        keys = np.arange(n_keys, dtype=np.int64) * 7919 - 3
        f.add_many(keys)
        assert f.contains_many(keys).all(), n_keys
    shapes: dict[str, list[Any]] = {
        "neg_int": list(range(-1, -3001, -1)),
        "random_bytes": [rng.randbytes(rng.randrange(4, 40)) for _ in range(3000)],
        "short_bytes": [i.to_bytes(3, "little")[: 1 + i % 3] + bytes([i % 7]) for i in range(3000)],
        "kib_keys": [bytes([i % 256]) * 1024 + i.to_bytes(4, "little") for i in range(2000)],
        "long_prefix": [f"https://example.com/a/very/long/shared/prefix/{i}" for i in range(3000)],
        "non_ascii": [f"ключ-{i}-日本-🎉" for i in range(3000)],
    }
    for shape, ks in shapes.items():
        f = ScalableBloomFilter(30, 0.01)
        for k in ks:
            f.add(k)
        assert all(f.contains_many(ks)) and all(k in f for k in ks), shape


# ---- the chain query equals the OR of its links ---------------------------------------


def _link_filters(f: ScalableBloomFilter) -> list[Any]:
    """Each link of f's state as its own (Blocked)BloomFilter, oldest first."""
    data = f.to_bytes()
    header_len = struct.unpack_from("<I", data, 20)[0]
    num_links = struct.unpack_from("<I", data, 64 + 28)[0]
    cls = bloomkit.BlockedBloomFilter if f.layout == "blocked" else bloomkit.BloomFilter
    out, off = [], header_len
    for i in range(num_links):
        length = struct.unpack_from("<Q", data, 64 + 40 + 8 * i)[0]
        out.append(cls.from_bytes(data[off:off + length], verify=False))
        off += -(-length // 64) * 64
    return out


class ChainProbeTests:
    """The chain's own probe paths (round across links, paired probes, the
    one-pass add, the batch paths) answer exactly what probing each link
    on its own answers -- with the long round (every k >= 6: p 0.01, 0.03),
    the short one (smallest k 3..5: p 0.2, 0.05, 0.25) and the plain path
    (some k < 3: p 0.9, 0.5)."""

    @pytest.mark.parametrize(
        "p, tightening", [(0.01, 0.5), (0.03, 0.5), (0.2, 0.8), (0.05, 0.5), (0.25, 0.5),
                          (0.9, 0.5), (0.5, 0.5)])
    def test_query_and_add_match_the_links(
        self, rng: random.Random, layout: str, p: float, tightening: float,
    ) -> None:
        f = ScalableBloomFilter(40, p, tightening=tightening, layout=layout)
        keys = [rng.getrandbits(64) for _ in range(3000)]
        for i, key in enumerate(keys):
            if i % 500 == 0:
                links = _link_filters(f)
            if i % 500 < 20:  # add's answer == no link reported the key
                before = any(key in link for link in _link_filters(f))
                assert f.add(key) is (not before)
            else:
                f.add(key)
        links = _link_filters(f)
        assert f.num_links >= 3
        probes = keys[::7] + [rng.getrandbits(64) for _ in range(3000)]
        want = [any(k in link for link in links) for k in probes]
        assert [k in f for k in probes] == want
        assert list(f.contains_many(probes)) == want
        assert list(f.contains_many(np.array(probes, dtype=np.uint64))) == want
        g = ScalableBloomFilter(40, p, tightening=tightening, layout=layout)
        g.add_many(keys)
        assert g == f  # the batch add stores exactly the per-item add's bits

    @pytest.mark.parametrize("p", [0.3, 0.01, 1e-4])
    @pytest.mark.parametrize("version", [0, 1])
    def test_vector_chain_paths_match_the_scalar_ones(self, rng: random.Random, p: float,
                                                      version: int) -> None:
        # The AVX2 chain paths of version-1 blocked chains (bk_simd.c: each
        # key's stream words once for every link; links k from 1 up to ~20,
        # so 1, 2 and 3 groups of 8 probes) store the bytes and give the
        # answers of the scalar link-by-link paths; version 0 keeps those.
        keys = [rng.getrandbits(40) for _ in range(3000)]
        keys += keys[:300]  # present keys re-added: answered, nothing written
        probes = keys[::5] + [rng.getrandbits(40) for _ in range(3000)]
        before = bloomkit._core.BloomBase._simd()
        seen = []
        try:
            for simd in (False, True):
                bloomkit._core.BloomBase._simd(simd)
                f = ScalableBloomFilter(40, p, layout="blocked", layout_version=version)
                new = [f.add(key) for key in keys]
                g = ScalableBloomFilter(40, p, layout="blocked", layout_version=version)
                added = g.add_many(keys)
                seen.append((f.to_bytes(), g.to_bytes(), new, added, [k in f for k in probes],
                             list(f.contains_many(probes)),
                             list(f.contains_many(np.array(probes, dtype=np.uint64)))))
        finally:
            bloomkit._core.BloomBase._simd(before)
        assert seen[0] == seen[1]
        state, batch_state, new, added, *answers = seen[1]
        assert state == batch_state and added == sum(new) and answers[0] == answers[1] == answers[2]
        assert f.num_links >= 5 and all(answers[0][:len(keys[::5])])


class ConcurrencyTests:
    def test_growth_waits_for_gil_free_queries(self) -> None:
        """contains_many over a numpy array runs without the GIL; growth
        frees the old chain buffer, so it must wait for such a query (a
        use-after-free otherwise: glibc usually keeps the freed block mapped
        and intact, so this catches it reliably only under ASan; it always
        checks that concurrent growth loses no key)."""
        f = ScalableBloomFilter(1000, 0.01)
        keys = np.arange(120_000, dtype=np.int64)
        f.add_many(keys[:20_000])
        stop = threading.Event()
        failures: list[str] = []

        def reader() -> None:
            while not stop.is_set():
                if not f.contains_many(keys[:20_000]).all():
                    failures.append("false negative")

        t = threading.Thread(target=reader)
        links_before = f.num_links
        t.start()
        try:
            for k in range(20_000, 120_000):
                f.add(k)
        finally:
            stop.set()
            t.join()
        assert not failures
        assert f.num_links > links_before
        assert f.contains_many(keys).all()


# ---- R8: golden files ----------------------------------------------------------------


def _golden_build(build: dict[str, Any]) -> ScalableBloomFilter:
    # A recipe without layout_version was written before blocked layout
    # version 1 existed: its blocked links are version 0.
    f = ScalableBloomFilter(
        build["initial_capacity"], build["error_rate"], growth=build["growth"],
        tightening=build["tightening"], layout=build["layout"], seed=build["seed"],
        layout_version=build.get("layout_version", 0),
    )
    f.add_many([f"golden-{i}" for i in range(build["add"])])
    return f


GOLDENS = sorted(p.stem for p in GOLDEN.glob("scalable_bloom_*.json"))


@pytest.mark.parametrize("name", GOLDENS)
def test_golden_files(name: str) -> None:
    manifest = json.loads((GOLDEN / f"{name}.json").read_text())
    data = (GOLDEN / f"{name}.bkf").read_bytes()
    assert hashlib.sha256(data).hexdigest() == manifest["sha256"]
    f = bloomkit.loads(data)
    assert type(f).__name__ == manifest["class"] and f.num_links == manifest["num_links"]
    assert all(k in f for k in manifest["members"])
    probes = [f"probe-{i}" for i in range(manifest["probes"]["count"])]
    assert sum(f.contains_many(probes)) == manifest["probes"]["false_positives"]
    assert without_key_domains(_golden_build(manifest["build"])) == data  # goldens predate it


def test_goldens_exist() -> None:
    assert len(GOLDENS) >= 2


# ---- R12-R15: hostile input ------------------------------------------------------------

OUTER_FIELDS = [(64, "d"), (72, "d"), (80, "Q"), (88, "I"), (92, "I"), (96, "I"), (100, "I")]
LINK_FIELDS = [(64, "Q"), (72, "I"), (76, "I"), (80, "Q"), (88, "d"), (96, "Q"), (104, "Q")]


def _small(layout: str = "classic") -> bytes:
    f = ScalableBloomFilter(4, 0.1, layout=layout)
    f.add_many(range(20))  # 3 links
    assert f.num_links == 3
    return f.to_bytes()


def _link_offsets(data: bytes) -> list[tuple[int, int]]:
    header_len = struct.unpack_from("<I", data, 20)[0]
    num_links = struct.unpack_from("<I", data, 92)[0]
    out, off = [], header_len
    for i in range(num_links):
        length = struct.unpack_from("<Q", data, 104 + 8 * i)[0]
        out.append((off, length))
        off += -(-length // 64) * 64
    return out


class HostileInputTests:
    def test_truncations_and_trailing_bytes(self) -> None:
        truncations_and_trailing(_small())

    def test_every_bit_flip(self) -> None:
        bit_flips(_small("blocked"))

    def test_every_header_byte_value(self) -> None:
        data = _small()
        header_len = struct.unpack_from("<I", data, 20)[0]
        every_byte_value(data, 0, header_len)

    def test_every_link_header_byte_value(self) -> None:
        data = _small()
        off, _ = _link_offsets(data)[1]
        every_byte_value(data, off, off + 128)

    def test_extreme_field_values(self) -> None:
        for layout in LAYOUTS:
            data = _small(layout)
            link_table = [(104 + 8 * i, "Q") for i in range(3)]
            mutate_fields(data, HEADER_INT_FIELDS + OUTER_FIELDS + link_table)
            for off, _ in _link_offsets(data):
                fields = [(off + o, c) for o, c in HEADER_INT_FIELDS + LINK_FIELDS]
                mutate_fields(data, fields)

    def test_absurd_chains_are_refused(self) -> None:
        data = bytearray(_small())
        for num_links in (0, 65, 2**31 - 1, 2**32 - 1):
            bad = bytearray(data)
            struct.pack_into("<I", bad, 92, num_links)
            with pytest.raises(FormatError):
                bloomkit.loads(reseal(bad))
        # a link whose capacity does not follow the growth rule
        off, _ = _link_offsets(bytes(data))[2]
        bad = bytearray(data)
        struct.pack_into("<Q", bad, off + 80, 4 * 2**2 + 1)
        with pytest.raises(FormatError, match="capacity"):
            bloomkit.loads(reseal(bad))
        # a link whose error rate does not follow the tightening rule
        bad = bytearray(data)
        struct.pack_into("<d", bad, off + 88, 0.05)
        with pytest.raises(FormatError, match="error rate"):
            bloomkit.loads(reseal(bad))
        # a link of the wrong kind, a link claiming a huge payload
        bad = bytearray(data)
        struct.pack_into("<H", bad, off + 12, 2)
        with pytest.raises(FormatError):
            bloomkit.loads(reseal(bad))
        bad = bytearray(data)
        struct.pack_into("<Q", bad, off + 32, 2**40)
        with pytest.raises(FormatError):
            bloomkit.loads(reseal(bad))

    def test_a_64_link_chain_of_tiny_links_is_bounded(self) -> None:
        # The largest legal chain a crafted file can declare is still bounded
        # by its real length; loading a valid long chain works.
        f = ScalableBloomFilter(1, 0.5, growth=2, tightening=0.99)
        f.add_many(range(2**20))
        assert 15 <= f.num_links <= 64
        g = load_clean(f.to_bytes())
        assert g == f


# ---- R1: model-based -------------------------------------------------------------------

keys_st = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.text(max_size=10),
    st.binary(max_size=10),
)


class ScalableMachine(RuleBasedStateMachine):
    """Every key of the model set is present, whatever the chain does."""

    def __init__(self) -> None:
        super().__init__()
        self.layout = random.choice(LAYOUTS)
        self.f = ScalableBloomFilter(4, 0.05, layout=self.layout, seed=5)
        self.model: set[object] = set()
        self.snapshots: list[tuple[ScalableBloomFilter, set[object]]] = []

    @rule(k=keys_st)
    def add(self, k: object) -> None:
        added = self.f.add(k)
        if k in self.model:
            assert not added
        self.model.add(k)

    @rule(ks=st.lists(keys_st, max_size=30))
    def add_many(self, ks: list[object]) -> None:
        self.f.add_many(ks)
        self.model.update(ks)

    @rule()
    def snapshot(self) -> None:
        self.snapshots.append((self.f.copy(), set(self.model)))

    @precondition(lambda self: self.snapshots)
    @rule()
    def union_snapshot(self) -> None:
        other, keys = self.snapshots.pop()
        self.f = other | self.f if random.random() < 0.5 else self.f.union(other)
        self.model |= keys

    @rule()
    def round_trip_bytes(self) -> None:
        self.f = bloomkit.loads(self.f.to_bytes())

    @rule()
    def round_trip_file(self) -> None:
        fd, path = tempfile.mkstemp(suffix=".bkf")
        os.close(fd)
        try:
            self.f.save(path)
            self.f = bloomkit.load(path)
        finally:
            os.unlink(path)

    @rule()
    def round_trip_pickle(self) -> None:
        self.f = pickle.loads(pickle.dumps(self.f))

    @rule()
    def clear(self) -> None:
        self.f.clear()
        self.model.clear()

    @invariant()
    def no_false_negatives(self) -> None:
        assert all(self.f.contains_many(list(self.model)))
        assert all(k in self.f for k in self.model)
        assert len(self.f.links) == self.f.num_links <= 64


TestScalableMachine = ScalableMachine.TestCase
TestScalableMachine.settings = settings(max_examples=40, stateful_step_count=40, deadline=None)


# ---- the generic tests' recipe (tests/kind_list.py) ------------------------------------

RECIPES = [kind_list.Recipe(
    "ScalableBloomFilter",
    hot=("add", "k"),
    merge=lambda a, b: a | b,
    threads=[
        kind_list.ThreadSpec("scalable", lambda key: ScalableBloomFilter(64, 0.01, key=key),
                             unite=kind_list.ior),
        kind_list.ThreadSpec(
            "scalable-blocked",
            lambda key: ScalableBloomFilter(64, 0.01, layout="blocked", key=key),
            unite=kind_list.ior),
    ],
    rewrites={"": "bloomkit.ScalableBloomFilter(50, 0.01, seed=1)"},
    numpy=kind_list.numpy_filter(lambda: ScalableBloomFilter(40, 0.01, seed=3)),
    arrow=kind_list.arrow_filter(lambda: ScalableBloomFilter(40, 0.01, seed=3)),
    # make_golden.write_scalable's form (keys f"golden-{i}", probes f"probe-{i}"); a
    # build without layout_version has version-0 blocked links
    golden={
        "scalable_bloom_blocked_v1_g4": {
            "initial_capacity": 64, "error_rate": 0.02, "growth": 4, "tightening": 0.8,
            "layout": "blocked", "layout_version": 1, "seed": 77, "add": 1500},
    },
)]
