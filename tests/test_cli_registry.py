"""``bloomkit kinds`` (bloomkit/cli/registry.py): the kind registry printed
from the descriptors, compared here with ``_core.KINDS`` itself, never with
numbers written down in the test."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import kind_list
from bloomkit import _core
from bloomkit.cli import EXIT_ERROR
from test_cli import ENV
from test_format_pages import PARAMS_AT, kind_class, page_of

ROOT = Path(__file__).resolve().parent.parent
TYPES = {"H": "u16", "I": "u32", "Q": "u64", "q": "i64", "d": "f64"}


def kinds(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bloomkit", "kinds", *args],
                          capture_output=True, text=True, env=ENV, timeout=120)


@pytest.fixture(scope="module")
def text_run() -> subprocess.CompletedProcess[str]:
    return kinds()


@pytest.fixture(scope="module")
def json_run() -> subprocess.CompletedProcess[str]:
    return kinds("--json")


def blocks(out: str) -> dict[int, list[str]]:
    """kind id -> the lines of its block (blank lines separate the blocks)."""
    found: dict[int, list[str]] = {}
    for block in out.strip().split("\n\n"):
        lines = block.splitlines()
        m = re.fullmatch(r"kind (\d+): (\w+)", lines[0])
        assert m, f"a block does not start with 'kind N: Name': {lines[0]!r}"
        found[int(m.group(1))] = lines
    return found


def type_name(fmt: str) -> str:
    return f"bytes[{fmt[:-1]}]" if fmt.endswith("s") else TYPES[fmt]


def test_text_lists_every_kind_in_id_order(text_run: subprocess.CompletedProcess[str]) -> None:
    assert text_run.returncode == 0 and text_run.stderr == "", text_run.stderr
    ids = [int(m) for m in re.findall(r"^kind (\d+):", text_run.stdout, re.M)]
    assert ids == [k.id for k in kind_list.loadable()]


@pytest.mark.parametrize("kind", kind_list.loadable(), ids=lambda k: k.name)
def test_text_block_says_what_the_descriptor_says(
        kind: Any, text_run: subprocess.CompletedProcess[str]) -> None:
    lines = blocks(text_run.stdout)[kind.id]
    assert lines[0] == f"kind {kind.id}: {kind.name}"
    fields = {ln[:14].strip(): ln[14:] for ln in lines[1:8]}  # "  label       value"
    assert fields["class"] == f"{kind_class(kind).__module__}.{kind.name}"
    assert fields["page"] == f'{page_of(kind).relative_to(ROOT)} ("File layout")'
    assert fields["layout"].split(" (")[0] == ", ".join(
        str(v) for v in range(kind.layout_max + 1))
    if kind.layout_param is not None:
        assert fields["layout"].endswith(f"(parameter {kind.layout_param})")
    traits = fields["traits"].split(";")[0].split()
    assert traits == [t for t in ("static", "mergeable", "intersectable", "removable",
                                  "counts", "window", "keyed", "grows", "bitwise")
                      if getattr(kind, t)] or traits == ["none"]
    assert fields["traits"].endswith(f"writers: {kind.writer_lock}")
    if kind.capacity_param is None:
        assert fields["capacity"] == "none"
    else:
        top = kind.capacity_max
        top_text = f"2**{top.bit_length() - 1}" if top & (top - 1) == 0 else str(top)
        assert fields["capacity"] == f"[1, {top_text}] ({kind.capacity_param})"
    if kind.error_rate_param is None:
        assert fields["error rate"] == "none"
    else:
        close = "]" if kind.error_rate_max_closed else ")"
        assert fields["error rate"] == (
            f"[{kind.error_rate_min:g}, {kind.error_rate_max:g}{close} "
            f"({kind.error_rate_param})")
    header = (f"varies, params_len >= {kind.params_len}" if kind.header_len == 0
              else f"{kind.header_len}, params_len {kind.params_len}")
    assert fields["header_len"] == header
    assert lines[8].split() == ["parameter", "offset", "width", "type"]
    params = [ln.split() for ln in lines[9:]]
    assert params == [[name, str(PARAMS_AT + offset), str(width), type_name(fmt)]
                      for name, offset, width, fmt in kind.param_layout], (
        f"kind {kind.id} ({kind.name}): the parameter rows differ from the descriptor")


def test_json_is_the_descriptors(json_run: subprocess.CompletedProcess[str]) -> None:
    assert json_run.returncode == 0 and json_run.stderr == "", json_run.stderr
    records = json.loads(json_run.stdout)
    assert [r["id"] for r in records] == [k.id for k in kind_list.loadable()]
    for r in records:
        kind = _core.KINDS[r["name"]]
        assert r["id"] == kind.id
        assert r["page"] == str(page_of(kind).relative_to(ROOT))
        assert (ROOT / r["page"]).is_file(), r["page"]
        assert r["layout_param"] == kind.layout_param
        assert r["layout_versions"] == list(range(kind.layout_max + 1))
        assert r["traits"] == {t: getattr(kind, t) for t in r["traits"]}
        assert r["writer_lock"] == kind.writer_lock
        assert r["header_len"] == kind.header_len and r["params_len"] == kind.params_len
        if kind.capacity_param is None:
            assert r["capacity"] is None
        else:
            assert r["capacity"] == {"param": kind.capacity_param, "min": 1,
                                     "max": kind.capacity_max}
        if kind.error_rate_param is None:
            assert r["error_rate"] is None
        else:
            assert r["error_rate"] == {
                "param": kind.error_rate_param, "min": kind.error_rate_min,
                "max": kind.error_rate_max, "max_closed": kind.error_rate_max_closed}
        assert [(p["name"], p["offset"] - PARAMS_AT, p["width"], p["format"])
                for p in r["params"]] == list(kind.param_layout), kind.name
        assert [p["type"] for p in r["params"]] == [type_name(f) for *_, f in
                                                    kind.param_layout]


def test_json_leaves_no_descriptor_field_out(json_run: subprocess.CompletedProcess[str]) -> None:
    """Every field of a Kind is printed: a field added to the descriptor fails
    here until ``bloomkit kinds`` shows it."""
    record = json.loads(json_run.stdout)[0]
    kind = _core.KINDS[record["name"]]
    shown = {"id", "name", "params_len", "header_len", "layout_param", "writer_lock",
             *record["traits"],
             "params", "param_layout",  # record["params"]: names, offsets, widths, formats
             "layout_max",  # record["layout_versions"]
             "capacity_param", "capacity_max",  # record["capacity"]
             "error_rate_param", "error_rate_min", "error_rate_max",  # record["error_rate"]
             "error_rate_max_closed"}
    fields = [f for f in dir(kind) if not f.startswith(("_", "n_")) and
              not callable(getattr(kind, f))]
    assert len(fields) == kind.n_fields
    assert sorted(set(fields) - shown) == []


def test_takes_no_file() -> None:
    r = kinds("week.bkf")
    assert r.returncode == EXIT_ERROR and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "unrecognized arguments: week.bkf" in r.stderr


def test_cli_md_quotes_the_real_output(text_run: subprocess.CompletedProcess[str]) -> None:
    """Every block of docs/cli.md that starts with 'kind N: Name' is that kind's
    block of the real output, line for line."""
    real = blocks(text_run.stdout)
    doc = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    quoted = re.findall(r"^```\n(kind \d+: \w+\n.*?)^```", doc, re.M | re.S)
    assert quoted, "docs/cli.md quotes no block of `bloomkit kinds`"
    for q in quoted:
        lines = q.rstrip("\n").splitlines()
        kind_id = int(lines[0].split()[1].rstrip(":"))
        assert lines == real[kind_id], (
            f"docs/cli.md's block of kind {kind_id} differs from `bloomkit kinds`:\n"
            + "\n".join(real[kind_id]))
