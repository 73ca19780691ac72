"""The golden-file manifest convention (tests/format/golden/*.json), shared
by the generic golden test, the hostile-input tests and make_golden.py.

A manifest next to ``<kind_name>_<variant>.bkf``::

    {
      "file": "BloomFilter_small.bkf",
      "class": "BloomFilter",              # the class loads() must return
      "kind": 1,                           # header kind id
      "format_version": "1.0",             # version that wrote it
      "build": {                           # how to rebuild it byte for byte
        "class": "BloomFilter",
        "constructor": null,               # or a classmethod name ("with_size")
        "args": [1000, 0.01],
        "kwargs": {"seed": 7},             # {"hex": "..."} values are bytes
        "method": "add_many",              # how keys go in (default add_many)
        "keys": {"recipe": "int_range", "start": 0, "stop": 1000}
      },
      "load_kwargs": {},                   # e.g. {"secret": {"hex": "..."}}
      "sha256": "...",                     # of the .bkf file
      "members": [0, 1, "..."],            # keys that must be reported present
      "probes": {"recipe": "str_format", "format": "absent-{}", "start": 0,
                 "stop": 20000, "false_positives": 183}
    }

Key recipes (``keys`` and ``probes``): ``int_range`` (start, stop, step=1)
gives ints; ``str_format`` (format, start, stop) gives ``format.format(i)``;
``bytes_format`` the same encoded as UTF-8 bytes.  The older nested form
``{"recipe": {"type": "int"|"str"|"bytes", "template": ..., "start", "stop",
"step"}}`` (the QuotientFilter goldens) is read too, as is a secret given as
``build["secret"]`` (hex).  ``file`` defaults to the manifest's name with
``.bkf``; a ``build`` without ``keys`` is kind-specific: the generic test then
checks everything but the rebuild, which the kind's own tests do.  A
BlockedBloomFilter recipe without ``layout_version`` in its kwargs builds
layout version 0: it was written before version 1 existed; so does a
SlidingBloomFilter spec without ``layout`` (its recipe in tests/test_sliding.py).

A kind that is not one in-memory structure names its ``opener`` instead
(``"bloomkit.parquet.open_index"`` for kind 12, the Parquet sidecar index,
which ``loads()`` refuses): its manifest records ``candidates``, the answer
to ``open_index(file).candidates(members, check=False)`` as ``[value,
[[path, row_group], ...]]`` pairs (paths as stored: relative to the golden
directory), and ``probes.false_positives`` counts the (probe, entry) pairs
answered for the probe recipe.  The lake it indexed is not kept (the index
answers without it; its mtimes make the file impossible to rebuild).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import bloomkit

GOLDEN = Path(__file__).parent / "golden"


def decode(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"hex"}:
        return bytes.fromhex(value["hex"])
    if isinstance(value, dict):
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def keys(recipe: dict[str, Any]) -> list[Any]:
    if isinstance(recipe.get("recipe"), dict):
        return keys(recipe["recipe"])
    if "type" in recipe:  # the nested form
        rng = range(recipe["start"], recipe["stop"], recipe.get("step", 1))
        if recipe["type"] == "int":
            return list(rng)
        template = recipe.get("template", "{}")
        strs = [template.format(i) for i in rng]
        return [x.encode() for x in strs] if recipe["type"] == "bytes" else strs
    name = recipe["recipe"]
    if name == "int_range":
        return list(range(recipe["start"], recipe["stop"], recipe.get("step", 1)))
    if name == "str_format":
        return [recipe["format"].format(i) for i in range(recipe["start"], recipe["stop"])]
    if name == "bytes_format":
        return [recipe["format"].format(i).encode()
                for i in range(recipe["start"], recipe["stop"])]
    raise ValueError(f"unknown key recipe {name!r}")


# Classes whose recipes gained a layout_version (docs/bloom.md, "File layout"): a
# recipe without one was written before blocked layout version 1 existed and
# builds version 0, as it did then.
_LAYOUT_VERSIONED = ("BlockedBloomFilter",)


def build(spec: dict[str, Any]) -> Any:
    cls = getattr(bloomkit, spec["class"])
    ctor = getattr(cls, spec["constructor"]) if spec.get("constructor") else cls
    kwargs = decode(spec.get("kwargs", {}))
    if spec["class"] in _LAYOUT_VERSIONED:
        kwargs.setdefault("layout_version", 0)
    if spec.get("method") == "constructor":  # static kinds: the keys are the first argument
        return ctor(keys(spec["keys"]), *decode(spec.get("args", [])), **kwargs)
    obj = ctor(*decode(spec.get("args", [])), **kwargs)
    getattr(obj, spec.get("method", "add_many"))(keys(spec["keys"]))
    return obj


def manifests() -> list[Path]:
    return sorted(GOLDEN.glob("*.json"))


def load_manifest(path: Path) -> dict[str, Any]:
    m: dict[str, Any] = json.loads(path.read_text())
    return m


def load_kwargs(m: dict[str, Any]) -> dict[str, Any]:
    if "load_kwargs" in m:
        kw: dict[str, Any] = decode(m["load_kwargs"])
        return kw
    secret = m.get("build", {}).get("secret")
    return {"secret": bytes.fromhex(secret)} if isinstance(secret, str) else {}


def data_file(manifest: Path, m: dict[str, Any]) -> Path:
    return GOLDEN / m.get("file", manifest.stem + ".bkf")


def rebuildable(m: dict[str, Any]) -> bool:
    return isinstance(m.get("build", {}).get("keys"), dict)


_RECIPES = ("int_range", "str_format", "bytes_format")


def probe_keys(m: dict[str, Any]) -> list[Any] | None:
    """The probe keys when the manifest gives them in a machine-readable
    recipe; None for a recipe written as prose (kind-specific manifests)."""
    probes = m.get("probes", {})
    recipe = probes.get("recipe")
    if isinstance(recipe, dict) and "type" in recipe:
        return keys(recipe)
    if recipe in _RECIPES:
        return keys(probes)
    return None


def member_keys(m: dict[str, Any]) -> list[Any] | None:
    """Keys that must be present (None when members are not a plain list,
    e.g. a sketch's key -> estimate mapping)."""
    members = m.get("members")
    return decode(members) if isinstance(members, list) else None


def format_version(m: dict[str, Any]) -> str | None:
    v = m.get("format_version", m.get("format"))
    return v if isinstance(v, str) else None


PARQUET_INDEX_OPENER = "bloomkit.parquet.open_index"


def opener(m: dict[str, Any]) -> str | None:
    """The function that opens this golden when ``loads()`` cannot (None: loads)."""
    o = m.get("opener")
    return o if isinstance(o, str) else None


def index_answers(path: Path, values: list[Any]) -> tuple[list[Any], int]:
    """(candidates as a manifest records them, pairs answered) of a Parquet index golden."""
    import os

    from bloomkit.parquet import open_index

    with open_index(path) as idx:
        res = idx.candidates(values, check=False)
    base = os.path.dirname(os.path.abspath(path))
    out = [[v, [[os.path.relpath(p, base), g] for p, g in res[v]]] for v in values]
    return out, sum(len(c) for c in res.values())
