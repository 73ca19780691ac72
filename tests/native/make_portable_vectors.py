"""Write the cases of tests/native/test_portable.c from the golden manifests.

The golden files (tests/format/golden/*.bkf) were written on a little-endian
machine.  test_portable.c runs on other CPUs (s390x, big-endian; i686, 32-bit
size_t; x86-64 under UBSan) with no Python there, so this script turns each
manifest into plain lines that C reads without a JSON parser.  The expected
answers are the manifests' own (members, false-positive counts, estimates):
nothing here is computed by bloomkit.

Output format, one directive a line (docs/building.md):

    case FILE.bkf KIND            start of a golden file's case (KIND: header id)
    secret HEX                    keyed filters: the 16-byte secret
    member KEY                    KEY must be reported present
    estimate KEY N                a sketch's estimate of KEY is exactly N
    probes QUERY PREFIXHEX START STOP FP
                                  keys PREFIX + decimal(i) for START <= i < STOP
                                  (bytes domain); QUERY is "contains" or
                                  "estimate" (estimate > 0 counts); exactly FP
                                  of them answer positive
    op add KEY | op remove KEY | op addc KEY COUNT | op record KEY
                                  the build, in order; with ops the C side
                                  empties a copy of the file (the kind's
                                  clear), replays them through the kind's
                                  add (addc: one add of COUNT; record, a
                                  TinyLFU access: an add) and remove, and
                                  compares the whole sealed file byte for
                                  byte (a build of adds only: once more by
                                  the kind's batch add)
    end

KEY is ``i<decimal>`` (an int, integer domain) or ``b<hex>`` (bytes domain:
str as UTF-8).  Usage: python tests/native/make_portable_vectors.py OUT
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bloomkit import _core  # the kind descriptors' traits, nothing computed

GOLDEN = Path(__file__).resolve().parent.parent / "format" / "golden"


def key(k: object) -> str:
    if isinstance(k, dict) and set(k) == {"hex"}:
        k = bytes.fromhex(k["hex"])
    if isinstance(k, bool) or not isinstance(k, (int, str, bytes)):
        raise TypeError(f"unsupported golden key {k!r}")
    if isinstance(k, int):
        return f"i{k}"
    raw = k.encode() if isinstance(k, str) else k
    return "b" + raw.hex()


def _template(t: str) -> tuple[str, str]:
    head, sep, tail = t.partition("{}")
    if not sep or "{" in tail:
        raise ValueError(f"template {t!r} is not PREFIX{{}}SUFFIX")
    return head, tail


def recipe_keys(r: dict[str, Any]) -> list[object]:
    """Every machine-readable key recipe the manifests use."""
    if isinstance(r.get("recipe"), dict):
        return recipe_keys(r["recipe"])
    start, stop, step = r.get("start", 0), r["stop"], r.get("step", 1)
    rng = range(start, stop, step)
    kind = r.get("type", r.get("kind"))
    name = r.get("recipe")
    if name == "int_range" or kind == "int":
        return list(rng)
    if name in ("str_format", "bytes_format") or kind in ("str", "bytes"):
        if "prefix" in r:
            head, tail = r["prefix"], ""
        else:
            head, tail = _template(r.get("format", r.get("template", "{}")))
        strs = [f"{head}{i}{tail}" for i in rng]
        return [s.encode() for s in strs] if (name == "bytes_format" or kind == "bytes") \
            else list(strs)
    raise ValueError(f"unknown recipe {r!r}")


def probes(m: dict[str, Any]) -> tuple[str, str, int, int, int] | None:
    """(query, prefix, start, stop, fp) for the str-prefix probe recipes."""
    p = m.get("probes", {})
    if "false_positives" not in p:
        return None
    r = p.get("recipe")
    fp = int(p["false_positives"])
    if isinstance(r, dict):
        r = r.get("recipe", r)
        if r.get("type", r.get("kind")) != "str" or r.get("step", 1) != 1:
            return None
        head, tail = (r["prefix"], "") if "prefix" in r else _template(r["template"])
        return ("contains", head, r.get("start", 0), r["stop"], fp) if not tail else None
    if r == "str_format":
        head, tail = _template(p["format"])
        return ("contains", head, p["start"], p["stop"], fp) if not tail else None
    if isinstance(r, str) and "f'probe-{i}'" in r:
        query = "estimate" if r.startswith("estimate(") else "contains"
        stop = p.get("count", p.get("n"))
        return (query, "probe-", 0, int(stop), fp)
    return None


def ops(m: dict[str, Any]) -> Iterator[str]:
    """The build as core operations, for the kinds built by plain key ops."""
    cls = m.get("class")
    b = m.get("build", {})
    if cls in _core.KINDS and _core.KINDS[cls].grows:
        return  # a GROWS kind's bytes come from growing through doublings, not from
        # an empty state of its final shape: members, probes and validation are
        # checked instead (the descriptor's trait: no kind is named here)
    if isinstance(b.get("keys"), dict):
        if b.get("method", "add_many") in ("add", "add_many"):
            for k in recipe_keys(b["keys"]):
                yield f"add {key(k)}"
        return
    if cls == "CountingBloomFilter":
        for i in range(b["add"]):
            yield f"add {key(f'golden-{i}')}"
        for i in range(b["add_twice"]):
            yield f"add {key(f'golden-{i}')}"
        for i in range(b["remove"]):
            yield f"remove {key(f'golden-{i}')}"
    elif cls == "CountMinSketch" and "i % 7 + 1" in b.get("recipe", {}).get("description", ""):
        for i in range(b["recipe"]["n"]):
            yield f"addc {key(f'key-{i}')} {i % 7 + 1}"
    elif cls == "TinyLFU" and "record(f'key-{i % 37}'); record(i)" in \
            b.get("recipe", {}).get("description", ""):
        for i in range(b["recipe"]["n"]):
            yield f"record {key(f'key-{i % 37}')}"
            yield f"record {key(i)}"
    elif cls == "CuckooFilter" and "add" in b and not b.get("until_full"):
        for k in recipe_keys(b["add"]):
            yield f"add {key(k)}"
        for k in recipe_keys(b.get("remove", {"kind": "int", "stop": 0})):
            yield f"remove {key(k)}"
    elif cls == "QuotientFilter" and "merge_with" not in b and "resize" not in b:
        for r in b.get("adds", []):
            for k in recipe_keys(r):
                yield f"add {key(k)}"
        for r in b.get("removes", []):
            for k in recipe_keys(r):
                yield f"remove {key(k)}"


def case(path: Path) -> list[str]:
    m = json.loads(path.read_text())
    bkf = m.get("file", path.stem + ".bkf")
    data = (GOLDEN / bkf).read_bytes()
    kind = int.from_bytes(data[12:14], "little")
    out = [f"case {bkf} {kind}"]
    if m.get("opener"):  # kind 12: validated (checksum, deep) on every CPU; its
        return [*out, "end"]  # answers need Python's value encoding (test_golden.py)
    b = m.get("build", {})
    secret = b.get("secret") or b.get("kwargs", {}).get("secret") \
        or m.get("load_kwargs", {}).get("secret")
    if isinstance(secret, dict):
        secret = secret["hex"]
    if secret:
        out.append(f"secret {secret}")
    members = m.get("members")
    if isinstance(members, list):
        out += [f"member {key(k)}" for k in members]
    elif isinstance(members, dict):
        out += [f"estimate {key(k)} {int(v)}" for k, v in members.items()]
    p = probes(m)
    if p is not None:
        query, head, start, stop, fp = p
        out.append(f"probes {query} {head.encode().hex() or '-'} {start} {stop} {fp}")
    out += [f"op {o}" for o in ops(m)]
    out.append("end")
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    lines: list[str] = []
    for manifest in sorted(GOLDEN.glob("*.json")):
        lines += case(manifest)
    Path(argv[1]).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
