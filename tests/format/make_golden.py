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
}


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
            if not isinstance(members[0], bytes) else [{"hex": m.hex()} for m in members[::37]],
            "probes": {**PROBES, "false_positives": sum(obj.contains_many(probes))},
        }
        assert bloomkit.loads(data, **decode(load_kw)) == obj
        bkf.write_bytes(data)
        js.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
        print(f"wrote {name}: {len(data)} bytes, {manifest['probes']['false_positives']} FPs")


if __name__ == "__main__":
    main()
