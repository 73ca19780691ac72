"""Write the golden files of tests/format/golden/ ONCE (R8).

    PYTHONPATH=src python tests/format/make_golden.py

Existing files are never overwritten: a released golden is what every
later bloomkit must read byte for byte.  To add a variant or a kind, append
a spec below (or drop your own manifest + .bkf, same convention) and run it.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _manifest import GOLDEN, build, decode, keys

import bloomkit

SECRET = {"hex": "000102030405060708090a0b0c0d0e0f"}
PROBES = {"recipe": "str_format", "format": "absent-{}", "start": 0, "stop": 20000}

SPECS: dict[str, dict[str, Any]] = {
    "BloomFilter_small": {
        "class": "BloomFilter", "args": [1000, 0.01], "kwargs": {},
        "keys": {"recipe": "int_range", "start": 0, "stop": 1000}},
    "BloomFilter_seeded_str": {
        "class": "BloomFilter", "args": [400, 0.001], "kwargs": {"seed": 2**63 + 5},
        "keys": {"recipe": "str_format", "format": "key-{}", "start": 0, "stop": 400}},
    "BloomFilter_keyed": {
        "class": "BloomFilter", "constructor": "with_size", "args": [4096, 5],
        "kwargs": {"secret": SECRET},
        "keys": {"recipe": "bytes_format", "format": "b{}", "start": 0, "stop": 300}},
    "BlockedBloomFilter_small": {
        "class": "BlockedBloomFilter", "args": [1000, 0.01], "kwargs": {},
        "keys": {"recipe": "int_range", "start": -500, "stop": 500}},
    "BlockedBloomFilter_seeded_str": {
        "class": "BlockedBloomFilter", "args": [500, 0.0001], "kwargs": {"seed": 42},
        "keys": {"recipe": "str_format", "format": "ключ-{}", "start": 0, "stop": 500}},
    # Blocked layout version 1 (in-block positions from a splitmix64 stream of
    # the key hash, exact-model sizing): the recipes of the two above, whose
    # files are version 0 (a recipe without layout_version builds version 0).
    "BlockedBloomFilter_v1_small": {
        "class": "BlockedBloomFilter", "args": [1000, 0.01], "kwargs": {"layout_version": 1},
        "keys": {"recipe": "int_range", "start": -500, "stop": 500}},
    "BlockedBloomFilter_v1_seeded_str": {
        "class": "BlockedBloomFilter", "args": [500, 0.0001],
        "kwargs": {"seed": 42, "layout_version": 1},
        "keys": {"recipe": "str_format", "format": "ключ-{}", "start": 0, "stop": 500}},
    # Count-min sketches with independent rows (row_hash 1, issue #16.5); the
    # count_min_sketch_basic / _conservative64 goldens hold row_hash 0.
    "count_min_sketch_rows1": {
        "class": "CountMinSketch", "args": [256, 4], "kwargs": {"seed": 7, "row_hash": 1},
        "keys": {"recipe": "str_format", "format": "key-{}", "start": 0, "stop": 300}},
    "count_min_sketch_rows1_conservative64": {
        "class": "CountMinSketch", "args": [200, 3],
        "kwargs": {"seed": 1, "conservative": True, "counter_bits": 64, "row_hash": 1},
        "keys": {"recipe": "int_range", "start": -150, "stop": 150}},
    "BinaryFuseFilter_f8": {
        "class": "BinaryFuseFilter", "method": "constructor", "kwargs": {"seed": 11},
        "keys": {"recipe": "int_range", "start": 0, "stop": 3000}},
    "BinaryFuseFilter_f16_str": {
        "class": "BinaryFuseFilter", "method": "constructor",
        "kwargs": {"fingerprint_bits": 16},
        "keys": {"recipe": "str_format", "format": "key-{}", "start": 0, "stop": 700}},
    "BinaryFuseFilter_f32_keyed": {
        "class": "BinaryFuseFilter", "method": "constructor",
        "kwargs": {"fingerprint_bits": 32, "secret": SECRET},
        "keys": {"recipe": "bytes_format", "format": "b{}", "start": 0, "stop": 200}},
    "BinaryFuseFilter_empty": {
        "class": "BinaryFuseFilter", "method": "constructor", "kwargs": {},
        "keys": {"recipe": "int_range", "start": 0, "stop": 0}},
    # GrowableFilter (kind 13): grown from 40 keys to 3000 (several doublings,
    # fingerprints of several lengths), and a keyed one with str keys.
    "GrowableFilter_grown": {
        "class": "GrowableFilter", "args": [40, 0.05], "kwargs": {"seed": 13},
        "keys": {"recipe": "int_range", "start": 0, "stop": 3000}},
    "GrowableFilter_keyed_str": {
        "class": "GrowableFilter", "args": [100, 0.01], "kwargs": {"secret": SECRET},
        "keys": {"recipe": "str_format", "format": "g{}", "start": 0, "stop": 500}},
}

# Scalable chains, in the manifest form tests/test_scalable.py reads (keys
# f"golden-{i}", probes f"probe-{i}"); a build without layout_version has
# version-0 blocked links.
SCALABLE_SPECS: dict[str, dict[str, Any]] = {
    "scalable_bloom_blocked_v1_g4": {
        "initial_capacity": 64, "error_rate": 0.02, "growth": 4, "tightening": 0.8,
        "layout": "blocked", "layout_version": 1, "seed": 77, "add": 1500},
}


# Counting Bloom filters, in the manifest form tests/test_counting.py reads
# (counting_bloom_c4 and _c16_seeded, written before this script had them,
# hold the classic layout; a build without "layout" is classic).
COUNTING_SPECS: dict[str, dict[str, Any]] = {
    "counting_bloom_blocked_c4": {
        "capacity": 200, "error_rate": 0.01, "counter_bits": 4, "seed": 0, "add": 150,
        "add_twice": 20, "remove": 40, "layout": "blocked"},
    "counting_bloom_blocked_c8_seeded": {
        "capacity": 100, "error_rate": 0.001, "counter_bits": 8, "seed": 12345, "add": 100,
        "add_twice": 100, "remove": 30, "layout": "blocked"},
}
COUNTING_RECIPE = (
    "CountingBloomFilter(capacity, error_rate, counter_bits=, seed=, layout=); add "
    "f'golden-{i}' for i in range(add) one by one; add_many([f'golden-{i}' for i in "
    "range(add_twice)]); remove f'golden-{i}' for i in range(remove)")


def positives(obj: Any, probes: list[Any]) -> int:
    """Probe keys reported present (a sketch: estimate > 0)."""
    if hasattr(obj, "contains_many"):
        return int(sum(obj.contains_many(probes)))
    return sum(1 for k in probes if k in obj)


def main() -> None:
    GOLDEN.mkdir(exist_ok=True)
    for name, spec in SPECS.items():
        bkf, js = GOLDEN / f"{name}.bkf", GOLDEN / f"{name}.json"
        if bkf.exists() or js.exists():
            print(f"keep {name} (goldens are never regenerated)")
            continue
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


def main_scalable() -> None:
    for name, spec in SCALABLE_SPECS.items():
        bkf, js = GOLDEN / f"{name}.bkf", GOLDEN / f"{name}.json"
        if bkf.exists() or js.exists():
            print(f"keep {name} (goldens are never regenerated)")
            continue
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


def main_counting() -> None:
    for name, spec in COUNTING_SPECS.items():
        bkf, js = GOLDEN / f"{name}.bkf", GOLDEN / f"{name}.json"
        if bkf.exists() or js.exists():
            print(f"keep {name} (goldens are never regenerated)")
            continue
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
# tests/test_sliding.py also calls to rebuild them byte for byte.  Count mode
# wraps the ring several times (members: the last remember_for keys); time
# mode runs an injected clock (members are checked by test_sliding at the
# recorded time: the generic test runs at today's time, when they expired).
SLIDING_SPECS: dict[str, dict[str, Any]] = {
    "SlidingBloomFilter_count": {
        "capacity": 500, "error_rate": 0.01, "seed": 5, "add": 3000, "window": None},
    "SlidingBloomFilter_count_keyed_str": {
        "capacity": 300, "error_rate": 0.001, "seed": 0, "add": 1000, "window": None,
        "secret": SECRET},
    "SlidingBloomFilter_time": {
        "capacity": 400, "error_rate": 0.01, "seed": 9, "add": 1200, "window": 60.0,
        "start": 1_600_000_000.0, "step": 0.25},
    # layout_version 1 (issue #32): a recipe without "layout" builds layout 0
    "SlidingBloomFilter_blocked_count": {
        "capacity": 500, "error_rate": 0.01, "seed": 5, "add": 3000, "window": None,
        "layout": "blocked"},
    "SlidingBloomFilter_blocked_count_keyed_str": {
        "capacity": 300, "error_rate": 0.001, "seed": 0, "add": 1000, "window": None,
        "secret": SECRET, "layout": "blocked"},
    "SlidingBloomFilter_blocked_time": {
        "capacity": 400, "error_rate": 0.01, "seed": 9, "add": 1200, "window": 60.0,
        "start": 1_600_000_000.0, "step": 0.25, "layout": "blocked"},
}


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


def main_sliding() -> None:
    for name, spec in SLIDING_SPECS.items():
        bkf, js = GOLDEN / f"{name}.bkf", GOLDEN / f"{name}.json"
        if bkf.exists() or js.exists():
            print(f"keep {name} (goldens are never regenerated)")
            continue
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


if __name__ == "__main__":
    main()
    main_scalable()
    main_parquet_index()
    main_counting()
    main_sliding()
