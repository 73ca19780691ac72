"""bloomkit.guava against the real Guava (Debian's libguava-java, a local JVM).

Byte-for-byte and answer-for-answer agreement with Guava's BloomFilter driven
by tests/jvm/BkGuavaTool.java for its long, UTF-8 string and byte-array
funnels, both directions and both strategies; the murmur3_128 vectors against
the installed jar.  Skipped with an install hint without Java or the jar,
except in CI (CI=true), where they must run."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bloomkit import FormatError, IncompatibleFiltersError, _core, guava
from jvm_tools import Missing, guava_tool, missing, run, write_keys

pa = pytest.importorskip("pyarrow")

FUNNEL = {"long": "long", "string": "string", "binary": "bytes"}


@pytest.fixture(scope="module")
def tool(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    try:
        return guava_tool(tmp_path_factory.mktemp("jvm"))
    except Missing as exc:
        missing(exc, "Guava")
        raise


def _keys(kind: str, n: int, rng: random.Random, tag: str) -> list[Any]:
    if kind == "long":
        return [rng.randrange(-2**63, 2**63) for _ in range(n)]
    if kind == "string":
        return [f"{tag}{rng.randrange(10**9)}" + "ü✓" * rng.randrange(3) for _ in range(n)]
    return [tag.encode() + bytes(rng.randrange(256) for _ in range(rng.randrange(0, 22)))
            for _ in range(n)]


def test_murmur3_128_equals_the_installed_guava(tool: list[str]) -> None:
    out = subprocess.run([*tool, "hash"], capture_output=True, text=True, check=True).stdout
    pinned = json.loads((Path(__file__).parent / "hash_vectors.json").read_text())
    lines = [json.loads(x) for x in out.splitlines()]
    assert lines == pinned["guava_murmur3_128"]
    for v in lines:
        got = _core.guava_murmur3_128(bytes.fromhex(v["data_hex"]), v["seed"])
        assert got.hex() == v["digest_hex"]


@pytest.mark.parametrize("kind", ["long", "string", "binary"])
def test_bytes_and_answers_equal_guava(tool: list[str], tmp_path: Path, kind: str,
                                       rng: random.Random) -> None:
    n = 4000
    keys, absent = _keys(kind, n, rng, "in"), _keys(kind, n, rng, "out")
    probes = keys[:500] + absent
    write_keys(tmp_path / "k", keys, kind)
    write_keys(tmp_path / "p", probes, kind)
    run(tool, "bloom", n, 0.01, kind, tmp_path / "k", tmp_path / "p", tmp_path / "f",
        tmp_path / "a")
    theirs = np.frombuffer((tmp_path / "a").read_bytes(), dtype=np.uint8).astype(bool)
    assert theirs[:500].all() and 0 < theirs[500:].sum() < n // 10

    f = guava.BloomFilter(n, 0.01, funnel=FUNNEL[kind])
    f.add_many(keys)
    assert f.to_bytes() == (tmp_path / "f").read_bytes()
    assert (f.contains_many(probes) == theirs).all()
    t = {"long": pa.int64(), "string": pa.string(), "binary": pa.large_binary()}[kind]
    g = guava.BloomFilter(n, 0.01, funnel=FUNNEL[kind])
    g.add_many(pa.array(keys, type=t))
    assert g == f
    assert (g.contains_many(pa.array(probes, type=t)) == theirs).all()
    loaded = guava.BloomFilter.from_bytes((tmp_path / "f").read_bytes(), FUNNEL[kind])
    assert loaded == f and loaded.strategy == "MURMUR128_MITZ_64"


@pytest.mark.parametrize("strategy", ["MURMUR128_MITZ_64", "MURMUR128_MITZ_32"])
def test_guava_reads_what_bloomkit_writes(tool: list[str], tmp_path: Path, strategy: str,
                                          rng: random.Random) -> None:
    keys = _keys("long", 3000, rng, "")
    probes = keys[:300] + _keys("long", 3000, rng, "")
    f = guava.BloomFilter(3000, 0.03, funnel="long", strategy=strategy)
    f.add_many(np.array(keys, dtype=np.int64))
    (tmp_path / "f").write_bytes(f.to_bytes())
    write_keys(tmp_path / "p", probes, "long")
    run(tool, "query", tmp_path / "f", "long", tmp_path / "p", tmp_path / "a")
    theirs = np.frombuffer((tmp_path / "a").read_bytes(), dtype=np.uint8).astype(bool)
    assert theirs[:300].all()
    assert (f.contains_many(probes) == theirs).all()


def test_unsupported_funnels_and_strategies_say_which() -> None:
    with pytest.raises(ValueError, match=r"integerFunnel\(\)"):
        guava.BloomFilter(10, funnel="integer")
    with pytest.raises(ValueError, match="unknown Guava funnel 'double'"):
        guava.BloomFilter.from_bytes(guava.BloomFilter(10).to_bytes(), funnel="double")
    with pytest.raises(ValueError, match="unknown Guava strategy"):
        guava.BloomFilter(10, strategy="MURMUR128_MITZ_128")
    data = bytearray(guava.BloomFilter(10).to_bytes())
    data[0] = 5
    with pytest.raises(FormatError, match="strategy ordinal"):
        guava.BloomFilter.from_bytes(bytes(data))


def test_each_funnel_takes_only_its_type() -> None:
    f = guava.BloomFilter(100, funnel="long")
    with pytest.raises(TypeError, match="long funnel takes int keys, not str"):
        f.add("x")
    with pytest.raises(TypeError, match="takes no"):
        f.add_many(pa.array(["x"]))
    s = guava.BloomFilter(100, funnel="string")
    with pytest.raises(TypeError, match="string funnel takes str keys, not bytes"):
        s.add(b"x")
    with pytest.raises(IncompatibleFiltersError):
        s.merge(guava.BloomFilter(100, funnel="bytes"))
