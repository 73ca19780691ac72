"""``bloomkit kinds``: the kind registry as this build holds it.

Everything printed is read from the kind descriptors (``_core.KINDS``: one
per kind, defined in its ``bk_<kind>.c`` and listed in bk_kinds.def), never
restated here: the id, the class, the page that documents the kind's bytes,
the layout versions, the traits, the limits and every header parameter with
its offset from byte 0 of the file.  docs/FORMAT.md sends a reader here for
the list of kinds; each kind's "File layout" section (on its page) spells
the same parameters out.

A kind's page is ``docs/<m>.md`` for the facade module ``bloomkit.<m>`` its
class lives in (``bloomkit.bloom`` -> docs/bloom.md; the Parquet sidecar
index, ``bloomkit.parquet.index.ParquetIndex`` -> docs/parquet.md).  The
class is the one registered for its id (``bloomkit.load``/``open``), or,
for a kind with its own reader, the class of that name its package exports
(``_OWN_READERS``).  Ids the format reserves without a descriptor (9) are
not in ``_core.KINDS``, so they are not listed.
"""

from __future__ import annotations

import argparse
import importlib
import json
from typing import Any

from .. import _core, _descriptor
from ..persist import kinds as persist_kinds
from .errors import EXIT_OK, CliError

# Packages whose kinds are not loaded by bloomkit.load but by their own
# reader (kind 12: bloomkit.parquet.open_index); their class is found there.
_OWN_READERS = ("bloomkit.parquet",)

# struct format of a parameter -> how the command names its type
_TYPES = {"H": "u16", "I": "u32", "Q": "u64", "q": "i64", "d": "f64"}

# the descriptor's boolean traits, in the order the command prints them
TRAITS = ("static", "mergeable", "intersectable", "removable", "counts", "window",
          "keyed", "grows", "bitwise")


def descriptors() -> list[_core.Kind]:
    """Every kind this build holds, in id order."""
    return sorted(_core.KINDS.values(), key=lambda k: k.id)


def kind_class(kind: _core.Kind) -> type[Any]:
    """The class of a kind: registered for its id, else exported under its
    name by the package of its own reader."""
    cls = persist_kinds.KINDS.get(kind.id)
    if cls is not None:
        return cls
    for package in _OWN_READERS:
        found = getattr(importlib.import_module(package), kind.name, None)
        if isinstance(found, type):
            return found
    raise CliError(f"kind {kind.id} ({kind.name}) has no class in this bloomkit")


def page(kind: _core.Kind) -> str:
    """``docs/<m>.md`` for the facade module ``bloomkit.<m>`` of the kind's class."""
    parts = kind_class(kind).__module__.split(".")
    return f"docs/{parts[1] if len(parts) > 1 else parts[0]}.md"


def type_name(fmt: str) -> str:
    """``u64`` for ``Q``, ``bytes[128]`` for ``128s``."""
    return f"bytes[{fmt[:-1]}]" if fmt.endswith("s") else _TYPES.get(fmt, fmt)


def layout_versions(kind: _core.Kind) -> list[int]:
    """The layout versions this build reads (0 only, for a kind with one)."""
    return list(range(kind.layout_max + 1))


def record(kind: _core.Kind) -> dict[str, Any]:
    """What ``--json`` prints for one kind (the text form prints the same)."""
    at = persist_kinds.FIXED_HEADER  # the parameters follow the fixed header
    return {
        "id": kind.id,
        "name": kind.name,
        "module": kind_class(kind).__module__,
        "page": page(kind),
        "layout_param": kind.layout_param,
        "layout_versions": layout_versions(kind),
        "traits": {t: getattr(kind, t) for t in TRAITS},
        "writer_lock": kind.writer_lock,
        "capacity": None if kind.capacity_param is None else {
            "param": kind.capacity_param, "min": 1, "max": kind.capacity_max},
        "error_rate": None if kind.error_rate_param is None else {
            "param": kind.error_rate_param, "min": kind.error_rate_min,
            "max": kind.error_rate_max, "max_closed": kind.error_rate_max_closed},
        "header_len": kind.header_len,
        "params_len": kind.params_len,
        "params": [{"name": name, "offset": at + offset, "width": width, "format": fmt,
                    "type": type_name(fmt)}
                   for name, offset, width, fmt in kind.param_layout],
    }


def text(r: dict[str, Any]) -> list[str]:
    """The text block of one kind's record."""
    kind = _core.KINDS[r["name"]]
    versions = r["layout_versions"]
    layout = ", ".join(map(str, versions))
    if r["layout_param"] is not None:
        layout += f" (parameter {r['layout_param']})"
    traits = [t for t in TRAITS if r["traits"][t]]
    capacity = ("none" if r["capacity"] is None else
                f"{_descriptor.capacity_range(kind)} ({r['capacity']['param']})")
    rate = ("none" if r["error_rate"] is None else
            f"{_descriptor.error_rate_range(kind)} ({r['error_rate']['param']})")
    # header_len 0: it varies with the state (a scalable chain's links), and
    # params_len is then what every state has at least
    header = (f"varies, params_len >= {r['params_len']}" if r["header_len"] == 0
              else f"{r['header_len']}, params_len {r['params_len']}")
    lines = [
        f"kind {r['id']}: {r['name']}",
        f"  class       {r['module']}.{r['name']}",
        f"  page        {r['page']} (\"File layout\")",
        f"  layout      {layout}",
        f"  traits      {' '.join(traits) or 'none'}; writers: {r['writer_lock']}",
        f"  capacity    {capacity}",
        f"  error rate  {rate}",
        f"  header_len  {header}",
        f"  {'parameter':<18} {'offset':>6} {'width':>5}  type",
    ]
    lines += [f"  {p['name']:<18} {p['offset']:>6} {p['width']:>5}  {p['type']}"
              for p in r["params"]]
    return lines


def cmd_kinds(args: argparse.Namespace) -> int:
    records = [record(k) for k in descriptors()]
    if args.json:
        print(json.dumps(records, indent=2))
        return EXIT_OK
    blocks = ["\n".join(text(r)) for r in records]
    print("\n\n".join(blocks))
    return EXIT_OK
