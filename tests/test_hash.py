"""bk_hash against independent implementations and pinned vectors (R9)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from bloomkit import _core

xxhash = pytest.importorskip("xxhash")

VECTORS = json.loads((Path(__file__).parent / "hash_vectors.json").read_text())


@pytest.mark.parametrize("vec", VECTORS["xxh3_64"], ids=lambda v: f"len{len(v['data_hex']) // 2}")
def test_xxh3_pinned(vec: dict[str, object]) -> None:
    data = bytes.fromhex(str(vec["data_hex"]))
    assert _core.xxh3_64(data, vec["seed"]) == vec["digest"]


@pytest.mark.parametrize("vec", VECTORS["xxh64"], ids=lambda v: f"len{len(v['data_hex']) // 2}")
def test_xxh64_pinned(vec: dict[str, object]) -> None:
    data = bytes.fromhex(str(vec["data_hex"]))
    assert _core.xxh64(data, vec["seed"]) == vec["digest"]


@pytest.mark.parametrize("vec", VECTORS["siphash24"], ids=lambda v: f"len{len(v['data_hex']) // 2}")
def test_siphash_published_vectors(vec: dict[str, str]) -> None:
    digest = _core.siphash24(bytes.fromhex(vec["data_hex"]), bytes.fromhex(vec["key_hex"]))
    assert digest.to_bytes(8, "little").hex() == vec["digest_hex"]


def test_at_least_64_vectors() -> None:
    assert len(VECTORS["xxh3_64"]) >= 64
    assert len(VECTORS["siphash24"]) == 64


@pytest.mark.parametrize("length", [*range(0, 257), 500, 1000, 1024, 2048, 4096, 10_000])
def test_xxh3_matches_xxhash_package(length: int, rng: random.Random) -> None:
    for seed in (0, 1, 0x9E3779B97F4A7C15, 2**64 - 1, rng.randrange(2**64)):
        data = rng.randbytes(length)
        assert _core.xxh3_64(data, seed) == xxhash.xxh3_64_intdigest(data, seed=seed)
        high = bytes(b | 0x80 for b in data)
        assert _core.xxh3_64(high, seed) == xxhash.xxh3_64_intdigest(high, seed=seed)


@pytest.mark.parametrize("length", [0, 1, 3, 4, 8, 9, 16, 17, 32, 33, 100, 1000])
def test_xxh64_matches_xxhash_package(length: int, rng: random.Random) -> None:
    for seed in (0, 1, 2**64 - 1, rng.randrange(2**64)):
        data = rng.randbytes(length)
        assert _core.xxh64(data, seed) == xxhash.xxh64_intdigest(data, seed=seed)


def test_hash_accepts_buffers() -> None:
    data = b"hello world"
    expect = _core.xxh3_64(data, 7)
    assert _core.xxh3_64(bytearray(data), 7) == expect
    assert _core.xxh3_64(memoryview(data), 7) == expect
    with pytest.raises(TypeError):
        _core.xxh3_64("text", 7)  # type: ignore[arg-type]


# ---- Spark's and Guava's MurmurHash3 (bloomkit.spark, bloomkit.guava) -------
# The vectors were printed by the real classes (tests/jvm/*.java);
# tests/test_spark.py and tests/test_guava.py re-run those programs against the
# installed jars and compare with these same functions.

_SPARK_FN = {
    "long": lambda v: _core.spark_hash_long(v["value"], v["seed"]),
    "int": lambda v: _core.spark_hash_int(v["value"], v["seed"]),
    "bytes": lambda v: _core.spark_hash_bytes(bytes.fromhex(v["data_hex"]), v["seed"]),
    "bytes2": lambda v: _core.spark_hash_bytes2(bytes.fromhex(v["data_hex"]), v["seed"]),
}


def _spark_id(v: dict[str, object]) -> str:
    what = v["value"] if "value" in v else f"len{len(str(v['data_hex'])) // 2}"
    return f"{v['fn']}-{v['seed']}-{what}"


@pytest.mark.parametrize("vec", VECTORS["spark_murmur3"], ids=_spark_id)
def test_spark_murmur3_pinned(vec: dict[str, object]) -> None:
    assert _SPARK_FN[str(vec["fn"])](vec) == vec["digest"]


@pytest.mark.parametrize("vec", VECTORS["guava_murmur3_128"],
                         ids=lambda v: f"len{len(v['data_hex']) // 2}-seed{v['seed']}")
def test_guava_murmur3_128_pinned(vec: dict[str, object]) -> None:
    got = _core.guava_murmur3_128(bytes.fromhex(str(vec["data_hex"])), vec["seed"])
    assert got.hex() == vec["digest_hex"]


def test_spark_bytes_variants_differ_only_with_a_tail() -> None:
    # hashUnsafeBytes mixes each tail byte as its own sign-extended block;
    # hashUnsafeBytes2 packs the tail as the reference does: the same for
    # whole words, different otherwise (0x80 is where sign extension shows).
    assert _core.spark_hash_bytes(b"abcd") == _core.spark_hash_bytes2(b"abcd")
    assert _core.spark_hash_bytes(b"abcd\x80") != _core.spark_hash_bytes2(b"abcd\x80")


def test_spark_hash_takes_java_int_seeds_both_ways() -> None:
    assert _core.spark_hash_long(7, -1) == _core.spark_hash_long(7, 2**32 - 1)
    with pytest.raises(OverflowError):
        _core.spark_hash_int(2**32)
