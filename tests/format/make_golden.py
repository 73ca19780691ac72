"""Write the golden files of tests/format/golden/ ONCE (R8).

    PYTHONPATH=src python tests/format/make_golden.py

Existing files are never overwritten: a released golden is what every
later bloomkit must read byte for byte.  The variants are the ``golden``
specs of each kind's recipe (tests/kind_list.py, in the kind's own test
module): to add a variant or a kind, add a spec there, in the generic form
of tests/format/_manifest.py (``class``, ``args``, ``kwargs``, ``keys``),
and run this once.  The Parquet index (no class at bloomkit.<name>) has its
specs here.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))  # kind_list and the kinds' tests

from _manifest import GOLDEN, build, decode, keys

import bloomkit
import kind_list

SECRET = kind_list.GOLDEN_SECRET
PROBES = {"recipe": "str_format", "format": "absent-{}", "start": 0, "stop": 20000}

COUNTING_RECIPE = (
    "CountingBloomFilter(capacity, error_rate, counter_bits=, seed=, layout=); add "
    "f'golden-{i}' for i in range(add) one by one; add_many([f'golden-{i}' for i in "
    "range(add_twice)]); remove f'golden-{i}' for i in range(remove)")


def positives(obj: Any, probes: list[Any]) -> int:
    """Probe keys reported present (a sketch: estimate > 0)."""
    if hasattr(obj, "contains_many"):
        return int(sum(obj.contains_many(probes)))
    return sum(1 for k in probes if k in obj)


def write_generic(name: str, spec: dict[str, Any]) -> None:
    """A golden in the generic form (tests/format/_manifest.py's build())."""
    bkf, js = GOLDEN / f"{name}.bkf", GOLDEN / f"{name}.json"
    obj = build(spec)
    data = obj.to_bytes()
    load_kw = {"secret": SECRET} if "secret" in spec["kwargs"] else {}
    probes = keys(PROBES)
    header = bloomkit._core.peek_header(data)
    members = keys(spec["keys"])
    manifest = {
        "file": bkf.name,
        "class": type(obj).__name__,
        "kind": header["kind"],
        "format_version": f"{header['version_major']}.{header['version_minor']}",
        "build": spec,
        "load_kwargs": load_kw,
        "sha256": hashlib.sha256(data).hexdigest(),
        "members": [m.hex() if isinstance(m, bytes) else m for m in members[:: 37]]
        if not (members and isinstance(members[0], bytes))
        else [{"hex": m.hex()} for m in members[::37]],
        "probes": {**PROBES, "false_positives": positives(obj, probes)},
    }
    assert bloomkit.loads(data, **decode(load_kw)) == obj
    bkf.write_bytes(data)
    js.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {name}: {len(data)} bytes, {manifest['probes']['false_positives']} FPs")


def write_scalable(name: str, spec: dict[str, Any]) -> None:
    """A scalable chain, in the form tests/test_scalable.py reads (keys f"golden-{i}",
    probes f"probe-{i}"); a build without layout_version has version-0 blocked links."""
    bkf, js = GOLDEN / f"{name}.bkf", GOLDEN / f"{name}.json"
    chain = bloomkit.ScalableBloomFilter(
        spec["initial_capacity"], spec["error_rate"], growth=spec["growth"],
        tightening=spec["tightening"], layout=spec["layout"], seed=spec["seed"],
        layout_version=spec.get("layout_version", 0))
    keys_ = [f"golden-{i}" for i in range(spec["add"])]
    chain.add_many(keys_)
    data = chain.to_bytes()
    probes = [f"probe-{i}" for i in range(20000)]
    header = bloomkit._core.peek_header(data)
    manifest = {
        "class": "ScalableBloomFilter",
        "format": f"{header['version_major']}.{header['version_minor']}",
        "num_links": chain.num_links,
        "build": {**spec, "keys": "add_many([f'golden-{i}' for i in range(add)])"},
        "sha256": hashlib.sha256(data).hexdigest(),
        "members": keys_[::25],
        "probes": {"recipe": "f'probe-{i}' for i in range(count)", "count": len(probes),
                   "false_positives": sum(chain.contains_many(probes))},
    }
    assert bloomkit.loads(data).to_bytes() == data
    bkf.write_bytes(data)
    js.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {name}: {len(data)} bytes, {chain.num_links} links, "
          f"{manifest['probes']['false_positives']} FPs")


# Parquet sidecar indexes (kind 12): a small lake written with pyarrow in a
# temporary directory, indexed there, and the index copied here.  Two files
# of different physical types (INT64 and INT32) so that per-file types are
# in the golden; one variant per granularity, one over a string column.
PARQUET_INDEX_SPECS: dict[str, dict[str, Any]] = {
    "ParquetIndex_row_groups_int": {"column": "v", "granularity": "row_group",
                                    "error_rate": 0.01, "seed": 0},
    "ParquetIndex_files_str": {"column": "s", "granularity": "file", "error_rate": 0.05,
                               "seed": 99},
}
PARQUET_LAKE = ("a.parquet: v int64 0..299, s 'user-{v}', 100 rows per row group; "
                "b.parquet: v int32 200..499, s 'user-{v}', 100 rows per row group")


def main_parquet_index() -> None:
    import shutil
    import tempfile

    import pyarrow as pa
    import pyarrow.parquet as pq
    from _manifest import PARQUET_INDEX_OPENER, index_answers

    from bloomkit.parquet import build_index

    for name, spec in PARQUET_INDEX_SPECS.items():
        bkf, js = GOLDEN / f"{name}.bkf", GOLDEN / f"{name}.json"
        if bkf.exists() or js.exists():
            print(f"keep {name} (goldens are never regenerated)")
            continue
        with tempfile.TemporaryDirectory() as d:
            for fname, lo, typ in (("a.parquet", 0, pa.int64()), ("b.parquet", 200, pa.int32())):
                vals = list(range(lo, lo + 300))
                pq.write_table(pa.table({"v": pa.array(vals, typ),
                                         "s": [f"user-{v}" for v in vals]}),
                               f"{d}/{fname}", row_group_size=100)
            build_index(f"{d}/*.parquet", spec["column"], spec["error_rate"],
                        spec["granularity"], output=f"{d}/{name}.bkf", seed=spec["seed"]).close()
            shutil.copyfile(f"{d}/{name}.bkf", bkf)
        if spec["column"] == "v":
            members: list[Any] = list(range(0, 500, 7))
            probes = {"recipe": "int_range", "start": 1000, "stop": 21000}
        else:
            members = [f"user-{v}" for v in range(0, 500, 7)]
            probes = dict(PROBES)
        data = bkf.read_bytes()
        cands, _ = index_answers(bkf, members)
        _, pairs = index_answers(bkf, keys(probes))
        header = bloomkit._core.peek_header(data)
        manifest = {
            "file": bkf.name, "class": "ParquetIndex", "kind": header["kind"],
            "format_version": f"{header['version_major']}.{header['version_minor']}",
            "opener": PARQUET_INDEX_OPENER,
            "build": {**spec, "lake": PARQUET_LAKE},
            "sha256": hashlib.sha256(data).hexdigest(),
            "members": members, "candidates": cands,
            "probes": {**probes, "false_positives": pairs},
        }
        js.write_text(json.dumps(manifest, indent=1) + "\n")
        print(f"wrote {name}: {len(data)} bytes, {pairs} false-positive pairs")


def write_counting(name: str, spec: dict[str, Any]) -> None:
    """A counting Bloom filter, in the form tests/test_counting.py reads (adds, adds
    twice, removes: COUNTING_RECIPE)."""
    bkf, js = GOLDEN / f"{name}.bkf", GOLDEN / f"{name}.json"
    f = bloomkit.CountingBloomFilter(
        spec["capacity"], spec["error_rate"], counter_bits=spec["counter_bits"],
        seed=spec["seed"], layout=spec["layout"])
    for i in range(spec["add"]):
        f.add(f"golden-{i}")
    f.add_many([f"golden-{i}" for i in range(spec["add_twice"])])
    for i in range(spec["remove"]):
        f.remove(f"golden-{i}")
    held = {f"golden-{i}" for i in range(spec["add"])}
    held -= {f"golden-{i}" for i in range(spec["remove"]) if i >= spec["add_twice"]}
    data = f.to_bytes()
    probes = [f"probe-{i}" for i in range(20000)]
    header = bloomkit._core.peek_header(data)
    manifest = {
        "class": "CountingBloomFilter",
        "format": f"{header['version_major']}.{header['version_minor']}",
        "build": {**spec, "keys": COUNTING_RECIPE},
        "sha256": hashlib.sha256(data).hexdigest(),
        "members": sorted(held)[:60],
        "probes": {"recipe": "f'probe-{i}' for i in range(count)", "count": len(probes),
                   "false_positives": int(sum(f.contains_many(probes)))},
    }
    assert bloomkit.loads(data) == f
    bkf.write_bytes(data)
    js.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {name}: {len(data)} bytes, {manifest['probes']['false_positives']} FPs")


# SlidingBloomFilter (kind 11): built by sliding_golden() below, which
# tests/test_sliding.py also calls to rebuild them byte for byte (their specs:
# its recipe).


def sliding_golden(spec: dict[str, Any]) -> tuple[Any, list[Any], float | None]:
    """Build a sliding golden: (filter, members, the clock's last time)."""
    clock_t = [spec.get("start", 0.0)]
    kwargs: dict[str, Any] = {"seed": spec["seed"], "window": spec["window"],
                              "layout": spec.get("layout", "sliced")}
    if "secret" in spec:
        kwargs["secret"] = decode(spec["secret"])
    if spec["window"] is not None:
        kwargs["clock"] = lambda: clock_t[0]
    f = bloomkit.SlidingBloomFilter(spec["capacity"], spec["error_rate"], **kwargs)
    keys_ = [f"sliding-{i}" if "secret" in spec else i for i in range(spec["add"])]
    for k in keys_:
        f.add(k)
        if spec["window"] is not None:
            clock_t[0] += spec["step"]
    if spec["window"] is None:
        members = keys_[-f.design.remember_for:]
        return f, members, None
    window_keys = int(spec["window"] / spec["step"]) - 1
    return f, keys_[-window_keys:], clock_t[0]


def write_sliding(name: str, build_spec: dict[str, Any]) -> None:
    """A sliding filter: ``{"sliding": spec}``, built by sliding_golden(spec)."""
    spec = build_spec["sliding"]
    bkf, js = GOLDEN / f"{name}.bkf", GOLDEN / f"{name}.json"
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no early shift in a golden
        f, members, at = sliding_golden(spec)
    data = f.to_bytes()
    header = bloomkit._core.peek_header(data)
    load_kw = {"secret": spec["secret"]} if "secret" in spec else {}
    probes = keys(PROBES)
    timed = spec["window"] is not None
    if timed:  # the generic test queries at today's time: all expired
        f.clock = lambda: 4_000_000_000.0
    manifest = {
        "file": bkf.name,
        "class": "SlidingBloomFilter",
        "kind": header["kind"],
        "format_version": f"{header['version_major']}.{header['version_minor']}",
        "build": {"sliding": spec, "note": "make_golden.sliding_golden(spec)"},
        "load_kwargs": load_kw,
        "sha256": hashlib.sha256(data).hexdigest(),
        "members": [] if timed else members[::7],
        "sliding_members": members[::7],
        "sliding_clock": at,
        "probes": {**PROBES, "false_positives": positives(f, probes)},
    }
    assert bloomkit.loads(data, **decode(load_kw)) == f
    bkf.write_bytes(data)
    js.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {name}: {len(data)} bytes, {manifest['probes']['false_positives']} FPs")


# The forms of the goldens three kinds had before the generic form covered them;
# a new kind's specs use the generic form (no edit here).
WRITERS = {"ScalableBloomFilter": write_scalable, "CountingBloomFilter": write_counting,
           "SlidingBloomFilter": write_sliding}


def main() -> None:
    GOLDEN.mkdir(exist_ok=True)
    for kind, recipe in sorted(kind_list.recipes().items()):
        for name, spec in recipe.golden.items():
            if (GOLDEN / f"{name}.bkf").exists() or (GOLDEN / f"{name}.json").exists():
                print(f"keep {name} (goldens are never regenerated)")
                continue
            WRITERS.get(kind, write_generic)(name, dict(spec))


if __name__ == "__main__":
    main()
    main_parquet_index()
