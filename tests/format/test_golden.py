"""R8: every golden file under golden/ loads, byte-identical, forever.

Generic over kinds: each ``golden/*.json`` manifest (see _manifest.py) is
one test case; a structure adds its goldens and needs no code here.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from _manifest import (
    GOLDEN,
    build,
    data_file,
    format_version,
    index_answers,
    load_kwargs,
    load_manifest,
    manifests,
    member_keys,
    opener,
    probe_keys,
    rebuildable,
)

import bloomkit
import kind_list
from key_domains import without_key_domains

CASES = manifests()


def test_every_recipe_golden_was_written_from_its_spec() -> None:
    """Each golden spec of a kind's recipe (tests/kind_list.py) names a file that
    make_golden.py wrote once from that very spec: a spec added but never run, or
    edited after its file was written, fails here."""
    for kind, recipe in kind_list.recipes().items():
        for stem, spec in recipe.golden.items():
            path = GOLDEN / f"{stem}.json"
            assert path.exists(), f"{kind}: run tests/format/make_golden.py once ({stem})"
            recorded = load_manifest(path)["build"]
            assert {k: recorded.get(k) for k in spec} == json.loads(json.dumps(spec)), stem


def test_there_are_goldens_for_the_bloom_kinds() -> None:
    kinds = {bloomkit._core.peek_header(data_file(p, load_manifest(p)).read_bytes())["kind"]
             for p in CASES}
    assert {1, 2} <= kinds


@pytest.mark.parametrize("manifest", CASES, ids=[p.stem for p in CASES])
class GoldenFileTests:
    def test_digest_and_header(self, manifest: Path) -> None:
        m = load_manifest(manifest)
        data = data_file(manifest, m).read_bytes()
        assert hashlib.sha256(data).hexdigest() == m["sha256"], "a golden file was changed"
        header = bloomkit._core.peek_header(data)
        assert header["kind_name"] == m["class"]
        assert header["kind"] == m.get("kind", header["kind"])
        version = format_version(m)
        assert version is None or f"{header['version_major']}.{header['version_minor']}" == version
        assert bloomkit.verify(data_file(manifest, m))["kind"] == header["kind"]

    def test_loads_with_members_and_exact_false_positives(self, manifest: Path) -> None:
        m = load_manifest(manifest)
        data = data_file(manifest, m).read_bytes()
        members, probes = member_keys(m), probe_keys(m)
        if opener(m) is not None:  # kind 12: the same answers through its opener
            with pytest.raises(bloomkit.UnsupportedFormatError, match="open_index"):
                bloomkit.loads(data)
            assert members is not None and probes is not None
            got, _ = index_answers(data_file(manifest, m), members)
            assert got == m["candidates"]
            _, pairs = index_answers(data_file(manifest, m), probes)
            assert pairs == m["probes"]["false_positives"]
            return
        for obj in (bloomkit.loads(data, **load_kwargs(m)),
                    bloomkit.load(data_file(manifest, m), **load_kwargs(m))):
            assert type(obj).__name__ == m["class"]
            assert obj.to_bytes() == data  # re-serialization is byte-identical
            if members is not None:
                assert all(k in obj for k in members)
            if probes is not None:
                assert sum(1 for k in probes if k in obj) == m["probes"]["false_positives"]
        # Manifests whose members/probes have a kind-specific form are checked
        # by that kind's own tests; here they get the generic checks above.

    def test_mapped_open_reads_the_same(self, manifest: Path) -> None:
        m = load_manifest(manifest)
        if opener(m) is not None:
            pytest.skip(f"{m['class']} is opened (mapped) by {opener(m)}, checked above")
        try:
            obj = bloomkit.open(data_file(manifest, m), **load_kwargs(m))
        except TypeError as exc:  # a kind that cannot work in place says so
            pytest.skip(f"{m['class']} cannot be memory-mapped: {exc}")
        with obj:
            assert obj.verify()["kind_name"] == m["class"]
            assert obj.to_bytes() == data_file(manifest, m).read_bytes()
            members = member_keys(m)
            if members is not None:
                assert all(k in obj for k in members)



# Manifests with a kind-specific build recipe are rebuilt by that kind's tests.
REBUILDABLE = [p for p in CASES if rebuildable(load_manifest(p))]


@pytest.mark.parametrize("manifest", REBUILDABLE, ids=[p.stem for p in REBUILDABLE])
def test_rebuild_is_byte_identical(manifest: Path) -> None:
    # A rebuild records its key domains (flag bits 8-11); the goldens were
    # written before, so the comparison masks exactly those bits.
    m = load_manifest(manifest)
    rebuilt = build(m["build"])
    assert rebuilt.key_types is not None
    assert without_key_domains(rebuilt.to_bytes()) == data_file(manifest, m).read_bytes()


@pytest.mark.parametrize("manifest", CASES, ids=[p.stem for p in CASES])
def test_golden_key_domains_are_unknown(manifest: Path) -> None:
    # written before key domains were recorded: "unknown", and no byte of the
    # file is changed by loading it (test_loads_... compares the bytes)
    m = load_manifest(manifest)
    data = data_file(manifest, m).read_bytes()
    assert bloomkit._core.peek_header(data)["flags"] & 0x0F00 == 0
    if opener(m) is None:
        assert bloomkit.loads(data, **load_kwargs(m)).key_types is None
