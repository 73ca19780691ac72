"""BinaryFuseFilter: no false negatives over key types and sizes (R1, R2), the
false-positive rate 2**-f (R3), space, duplicates, immutability, error_rate=
selection, keyed mode, the format round trip and mapped files (R8, R21,
R23), hostile parameters (R15), and the plain-C core test."""

from __future__ import annotations

import copy
import math
import pickle
import shutil
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bloomkit
import kind_list
import native_c
from bloomkit import BinaryFuseFilter, BlockedBloomFilter, FormatError
from bloomkit.fuse import fingerprint_bits_for

np = pytest.importorskip("numpy")

ROOT = Path(__file__).resolve().parent.parent
NATIVE = ROOT / "src" / "bloomkit" / "_native"
PARAMS = 64  # params area offset; docs/fuse.md "File layout"

KEYS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.text(max_size=20),
    st.binary(max_size=20),
    st.booleans(),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(KEYS, max_size=300), st.sampled_from([8, 16, 32]))
def test_every_key_is_found_whatever_the_types_and_duplicates(keys: list[object], f: int) -> None:
    """R1: never a false negative; len() counts distinct keys (1 and True are one key)."""
    doubled = keys + keys[::2]
    fu = BinaryFuseFilter(doubled, fingerprint_bits=f)
    assert all(k in fu for k in keys)
    assert all(fu.contains_many(keys))
    distinct = {fu._key_hash(k) for k in keys}
    assert len(fu) == len(distinct)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 10, 31, 100, 257, 1000, 4097, 30000])
def test_small_sizes_where_segments_degenerate(n: int, rng: object) -> None:
    """R2: the tiny shapes (one segment, segment length 1..16) build and answer."""
    keys = [f"k{i}" for i in range(n)]
    for f in (8, 16, 32):
        fu = BinaryFuseFilter(keys, fingerprint_bits=f)
        assert len(fu) == n
        assert all(fu.contains_many(keys))
        assert fu.array_length >= n
        if n == 0:
            assert fu.nbytes == 0 and "x" not in fu and 0 not in fu


def test_a_million_keys_no_false_negative_and_space() -> None:
    """10^6 keys: every key found; 8/16/32-bit tables within 9.1/18.2/36.4 bits a key."""
    keys = np.arange(10**6, dtype=np.int64) * 7919 + 13
    limits = {8: 9.1, 16: 18.2, 32: 36.4}
    for f, limit in limits.items():
        fu = BinaryFuseFilter(keys, fingerprint_bits=f)
        assert fu.contains_many(keys).all()
        assert len(fu) == 10**6
        print(f"f={f}: {fu.bits_per_key:.3f} bits/key, arity {fu.arity}")
        assert fu.bits_per_key <= limit


@pytest.mark.parametrize("f", [8, 16])
def test_false_positive_rate_within_three_standard_errors(f: int) -> None:
    """R3: 10^6 absent probes; the rate is 2**-f within 3 standard errors."""
    n, probes = 200_000, 10**6
    fu = BinaryFuseFilter(np.arange(n, dtype=np.int64), fingerprint_bits=f)
    absent = np.arange(n, n + probes, dtype=np.int64) * 3 + 10**12
    fp = int(fu.contains_many(absent).sum())
    p = 2.0**-f
    se = math.sqrt(p * (1 - p) / probes)
    print(f"f={f}: {fp} false positives in {probes}, rate {fp / probes:.6f}, 2^-f {p:.6f}")
    assert abs(fp / probes - p) <= 3 * se
    assert fu.error_rate == p


def test_smaller_than_a_bloom_filter_at_the_same_rate() -> None:
    keys = np.arange(10**5, dtype=np.int64)
    fu = BinaryFuseFilter(keys)
    bloom = BlockedBloomFilter(10**5, fu.error_rate)
    assert fu.nbytes < 0.8 * bloom.nbytes


def test_duplicates_and_order_do_not_change_the_bytes() -> None:
    """The filter is a function of the set (what the distributed build relies on)."""
    keys = [f"key-{i}" for i in range(5000)]
    a = BinaryFuseFilter(keys, seed=3)
    b = BinaryFuseFilter(keys[::-1] + keys[:2500] * 3, seed=3)
    assert a.to_bytes() == b.to_bytes()
    assert len(b) == 5000
    one = BinaryFuseFilter(["same"] * 100_000)
    assert len(one) == 1 and "same" in one


def test_build_from_hashes_equals_build_from_keys() -> None:
    keys = np.arange(50_000, dtype=np.int64)
    a = BinaryFuseFilter(keys, seed=9, fingerprint_bits=16)
    hs = np.array([a._key_hash(int(k)) for k in keys[:50_000]], dtype=np.uint64)
    b = BinaryFuseFilter.from_hashes(np.concatenate([hs, hs[:10]]), seed=9, fingerprint_bits=16,
                                     key_types={"int"})
    assert a == b and a.to_bytes() == b.to_bytes()
    # hashes carry no key type: without key_types the domains are unknown
    c = BinaryFuseFilter.from_hashes(hs, seed=9, fingerprint_bits=16)
    assert c.key_types is None and a.key_types == {"int"} and c == a
    with pytest.raises(TypeError):
        BinaryFuseFilter.from_hashes(keys.astype(np.float64))


@pytest.mark.parametrize("method", ["add", "add_many", "update"])
def test_add_says_static_and_names_the_alternatives(method: str) -> None:
    fu = BinaryFuseFilter([1, 2, 3])
    with pytest.raises(TypeError, match="static") as e:
        getattr(fu, method)([4])
    for name in ("BloomFilter", "CuckooFilter", "ScalableBloomFilter"):
        assert name in str(e.value)
    with pytest.raises(TypeError, match="no union"):
        _ = fu | fu
    with pytest.raises(TypeError, match="build it from its keys"):
        BinaryFuseFilter.create("x.bkf", 10)


def test_error_rate_picks_the_smallest_width() -> None:
    assert fingerprint_bits_for(0.01) == 8
    assert fingerprint_bits_for(2**-8) == 8
    assert fingerprint_bits_for(0.001) == 16
    assert fingerprint_bits_for(2**-16) == 16
    assert fingerprint_bits_for(1e-6) == 32
    assert BinaryFuseFilter([1], error_rate=0.0001).fingerprint_bits == 16
    with pytest.raises(ValueError, match="2\\*\\*-32"):
        BinaryFuseFilter([1], error_rate=1e-12)
    with pytest.raises(TypeError, match="not both"):
        BinaryFuseFilter([1], error_rate=0.01, fingerprint_bits=8)
    with pytest.raises(ValueError, match="8, 16 or 32"):
        BinaryFuseFilter([1], fingerprint_bits=12)
    with pytest.raises(TypeError, match="iterable"):
        BinaryFuseFilter(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="keys must be str"):
        BinaryFuseFilter([1.5])


def test_key_mapping_and_keyed_mode() -> None:
    secret = bytes(range(16))
    fu = BinaryFuseFilter(["A", "B"], secret=secret, key=str.lower)
    assert "a" in fu and "A" in fu and fu.keyed
    data = fu.to_bytes()
    with pytest.raises(ValueError, match="secret"):
        bloomkit.loads(data)  # the secret is not in the file
    back = bloomkit.loads(data, secret=secret, key=str.lower)
    assert "b" in back and back == fu
    with pytest.raises((ValueError, bloomkit.BloomkitError)):
        bloomkit.loads(data, secret=bytes(16))
    plain = BinaryFuseFilter(["a", "b"])
    assert plain.to_bytes() != BinaryFuseFilter(["a", "b"], secret=secret).to_bytes()


def test_round_trip_save_load_open_pickle(tmp_path: Path) -> None:
    keys = [f"u{i}" for i in range(20_000)]
    fu = BinaryFuseFilter(keys, fingerprint_bits=16, seed=5)
    assert bloomkit.loads(bloomkit.dumps(fu)) == fu
    assert pickle.loads(pickle.dumps(fu)) == fu
    assert copy.copy(fu) == fu
    path = tmp_path / "f.bkf"
    fu.save(path)
    assert bloomkit.load(path) == fu
    m = bloomkit.open(path)
    try:
        assert isinstance(m, BinaryFuseFilter) and m.mapped and not m.writable
        assert m == fu and all(m.contains_many(keys))
        assert bloomkit.verify(m)["kind"] == 10
    finally:
        m.close()
    assert "count=20000" in repr(fu) and "fingerprint_bits=16" in repr(fu)


def _fuse_bytes() -> bytes:
    return BinaryFuseFilter(range(1000)).to_bytes()


def _reseal(b: bytearray) -> bytes:
    head = bytearray(b[:128])
    struct.pack_into("<Q", head, 40, 0)
    seed = bloomkit._core.xxh3_64(bytes(head))
    struct.pack_into("<Q", b, 40, bloomkit._core.xxh3_64(bytes(b[128:]), seed))
    return bytes(b)


@pytest.mark.parametrize(
    "off,fmt,value,reason",
    [
        (0, "<I", 5, "arity"),
        (4, "<I", 12, "fingerprint_bits"),
        (16, "<I", 3, "power of two"),
        (16, "<I", 2**19, "power of two"),
        (20, "<I", 2**32 - 1, "array_length"),
        (24, "<Q", 2**64 - 1, "array_length"),
        (32, "<Q", 2**40, "count"),
        (32, "<Q", 0, "count"),
        (40, "<I", 65, "attempts"),
        (44, "<I", 1, "reserved"),
    ],
)
def test_hostile_parameters_are_refused_with_their_reason(
    off: int, fmt: str, value: int, reason: str
) -> None:
    """R15: every parameter and the segment arithmetic are checked before use."""
    b = bytearray(_fuse_bytes())
    struct.pack_into(fmt, b, PARAMS + off, value)
    with pytest.raises(FormatError, match=reason):
        bloomkit.loads(_reseal(b))


def test_payload_length_must_match_the_shape() -> None:
    b = bytearray(_fuse_bytes())
    struct.pack_into("<I", b, PARAMS + 20, struct.unpack_from("<I", b, PARAMS + 20)[0] - 1)
    struct.pack_into("<Q", b, PARAMS + 24, struct.unpack_from("<Q", b, PARAMS + 24)[0]
                     - struct.unpack_from("<I", b, PARAMS + 16)[0])
    with pytest.raises(FormatError, match="payload_len"):
        bloomkit.loads(_reseal(b))


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_plain_c_core(tmp_path: Path) -> None:
    """tests/native/test_bk_fuse.c: the core without Python (sizes 0..300, 2*10^5)."""
    out = native_c.build_and_run("fuse", tmp_path)
    assert out.returncode == 0 and "test_bk_fuse: ok" in out.stdout


def test_build_from_data_files_equals_a_build_from_the_keys(tmp_path: Path) -> None:
    """bloomkit.build_from(kind=BinaryFuseFilter) keeps 8 bytes a key of hashes,
    then builds: the same bytes as a build from the keys (text lines are bytes)."""
    keys = [f"pw{i}" for i in range(5000)]
    src = tmp_path / "k.txt"
    src.write_text("".join(k + "\n" for k in keys + keys[:50]))
    f = bloomkit.build_from(src, BinaryFuseFilter, error_rate=1e-4, seed=6)
    ref = BinaryFuseFilter([k.encode() for k in keys], error_rate=1e-4, seed=6)
    assert f.to_bytes() == ref.to_bytes() and len(f) == 5000
    with pytest.raises(TypeError, match="no capacity"):
        bloomkit.build_from(src, BinaryFuseFilter, 100)


# ---- the generic tests' recipe (tests/kind_list.py) ------------------------------------

RECIPES = [kind_list.Recipe(
    "BinaryFuseFilter",
    hot=("copy", ""),
    merge=None,  # static: built once from all its keys
    threads="static: built once, nothing to add while others read",
    rewrites="static: never mapped for writing, so no writer rewrites its header",
    numpy="static, no add paths: test_fuse builds from int64 arrays",
    arrow="static, no add_many: test_arrow_keys.test_binary_fuse_builds_from_arrow",
    golden={
        "BinaryFuseFilter_f8": {
            "class": "BinaryFuseFilter", "method": "constructor", "kwargs": {"seed": 11},
            "keys": {"recipe": "int_range", "start": 0, "stop": 3000}},
        "BinaryFuseFilter_f16_str": {
            "class": "BinaryFuseFilter", "method": "constructor",
            "kwargs": {"fingerprint_bits": 16},
            "keys": {"recipe": "str_format", "format": "key-{}", "start": 0, "stop": 700}},
        "BinaryFuseFilter_f32_keyed": {
            "class": "BinaryFuseFilter", "method": "constructor",
            "kwargs": {"fingerprint_bits": 32, "secret": kind_list.GOLDEN_SECRET},
            "keys": {"recipe": "bytes_format", "format": "b{}", "start": 0, "stop": 200}},
        "BinaryFuseFilter_empty": {
            "class": "BinaryFuseFilter", "method": "constructor", "kwargs": {},
            "keys": {"recipe": "int_range", "start": 0, "stop": 0}},
    },
)]
