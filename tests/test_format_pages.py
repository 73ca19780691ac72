"""The byte layout of every kind is written once, on the kind's own page, and
agrees with the kind's descriptor in C (docs/FORMAT.md, "Kinds").

docs/FORMAT.md holds the container every kind shares; kind N's parameters
and payload are in the "File layout" section of ``docs/<m>.md``, ``m`` the
facade module its class lives in.  For every kind in ``_core.KINDS``: the
page exists, has exactly one "## File layout" section, that section names
the kind ("Kind N": a "### Kind N" subsection when the page holds several
kinds), and its parameter table has a row for every parameter of the
descriptor, at the descriptor's offset (from byte 0: 64 + the offset in the
parameter block) and width, whose field starts with the parameter's name.
A page that drifts from the descriptor fails here, naming the kind and the
parameter.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import bloomkit
import bloomkit.parquet
import kind_list

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PARAMS_AT = 64  # the parameters follow the container's fixed 64-byte header

# a row of an ASCII layout table: | offset | width | field ...
_ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(.*?)\s*\|?$")


def kind_class(kind: Any) -> type[Any]:
    """The class of a kind: ``bloomkit.<Name>`` (registered for load/open), or
    exported by the package of its own reader (the Parquet index)."""
    cls = getattr(bloomkit, kind.name, None) or getattr(bloomkit.parquet, kind.name, None)
    assert isinstance(cls, type), f"kind {kind.id} ({kind.name}): no class found"
    return cls


def page_of(kind: Any) -> Path:
    """docs/<m>.md for the facade module bloomkit.<m> of the kind's class."""
    return DOCS / f"{kind_class(kind).__module__.split('.')[1]}.md"


def sections(text: str, level: int) -> list[tuple[str, str]]:
    """(heading, body) of every heading of exactly ``level`` #s, outside fenced
    blocks; the body runs to the next heading of that level or higher."""
    out: list[tuple[str, list[str]]] = []
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        m = None if fenced else re.match(r"^(#+) (.*)$", line)
        if m and len(m.group(1)) <= level:
            out.append((m.group(2), []) if len(m.group(1)) == level else ("", []))
            continue
        if out:
            out[-1][1].append(line)
    return [(h, "\n".join(b)) for h, b in out if h]


def file_layout(text: str) -> list[str]:
    """The bodies of the page's "## File layout" sections."""
    return [body for heading, body in sections(text, 2) if heading == "File layout"]


def kind_part(section: str, kind: Any) -> str | None:
    """The text of ``section`` about ``kind``: its preamble (shared by the kinds
    of the page) and its "### Kind N" subsection when the section has
    subsections, else the whole section; None when a subsection is missing."""
    subs = sections(section, 3)
    if not subs:
        return section
    preamble = section.split("\n### ", 1)[0]
    mine = [f"### {heading}\n{body}" for heading, body in subs
            if re.search(rf"\bKind {kind.id}\b", heading)]
    return preamble + "\n" + mine[0] if len(mine) == 1 else None


def rows(text: str) -> dict[int, list[tuple[int, str]]]:
    """offset -> [(width, field text)] of every layout-table row in ``text``."""
    out: dict[int, list[tuple[int, str]]] = {}
    for line in text.splitlines():
        m = _ROW.match(line)
        if m:
            out.setdefault(int(m.group(1)), []).append((int(m.group(2)), m.group(3)))
    return out


def check_kind(kind: Any, page_text: str, where: str, kinds_on_page: int) -> list[str]:
    """Every way the page's File layout disagrees with the kind's descriptor."""
    name = f"{where} \"File layout\", kind {kind.id} ({kind.name})"
    found = file_layout(page_text)
    if len(found) != 1:
        return [f"{where}: {len(found)} \"## File layout\" sections, want exactly one"]
    part = kind_part(found[0], kind)
    if part is None or (kinds_on_page > 1 and not sections(found[0], 3)):
        return [f"{name}: no (single) \"### Kind {kind.id}\" subsection; a page of "
                f"{kinds_on_page} kinds has one per kind"]
    problems = []
    if not re.search(rf"\bKind {kind.id}\b", part):
        problems.append(f"{name}: does not name \"Kind {kind.id}\"")
    table = rows(part)
    for param, offset, width, _fmt in kind.param_layout:
        at = PARAMS_AT + offset
        here = table.get(at, [])
        if not here:
            problems.append(f"{name}, parameter {param}: no row at offset {at}")
            continue
        if not any(re.match(rf"{re.escape(param)}\b", text) for _, text in here):
            problems.append(f"{name}, parameter {param}: the row at offset {at} is "
                            f"{here[0][1]!r}, not {param}")
            continue
        widths = [w for w, text in here if re.match(rf"{re.escape(param)}\b", text)]
        if width not in widths:
            problems.append(f"{name}, parameter {param}: width {widths[0]} at offset "
                            f"{at}, the descriptor says {width}")
    return problems


KINDS = kind_list.loadable()
PAGES: dict[Path, list[Any]] = {}
for _k in KINDS:
    PAGES.setdefault(page_of(_k), []).append(_k)


def test_every_kind_has_a_page() -> None:
    missing = [f"kind {k.id} ({k.name}): {page_of(k).relative_to(ROOT)} does not exist"
               for k in KINDS if not page_of(k).is_file()]
    assert not missing, "\n".join(missing)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_the_page_spells_out_the_descriptor(kind: Any) -> None:
    page = page_of(kind)
    problems = check_kind(kind, page.read_text(encoding="utf-8"),
                          str(page.relative_to(ROOT)), len(PAGES[page]))
    assert not problems, "\n".join(problems)


def test_no_page_has_a_layout_of_no_kind() -> None:
    """A "File layout" section lives only on a kind's page."""
    stray = [str(p.relative_to(ROOT)) for p in sorted(DOCS.glob("*.md"))
             if p not in PAGES and file_layout(p.read_text(encoding="utf-8"))]
    assert not stray, f"File layout sections on pages of no kind: {stray}"


def test_format_md_keeps_only_the_container() -> None:
    """FORMAT.md names no kind's section and draws no parameter past byte 64;
    it sends the reader to the registry and the kinds' pages."""
    text = (DOCS / "FORMAT.md").read_text(encoding="utf-8")
    headings = [h for h, _ in sections(text, 2) + sections(text, 3)
                if re.search(r"\bKinds? \d+", h)]
    assert not headings, f"FORMAT.md still has kind sections: {headings}"
    past = sorted(at for at in rows(text) if at >= PARAMS_AT)
    assert not past, f"FORMAT.md draws parameter rows at offsets {past}: they belong on the " \
                     "kind's page"
    for needed in ("bk_kinds.def", "bloomkit kinds", "File layout", "docs/<facade module>.md"):
        assert needed in text, f"FORMAT.md does not say {needed!r}"


def test_the_check_catches_drift() -> None:
    """The check names the kind and the parameter of a row that moved, changed
    width or lost its name, and a missing subsection."""
    kind = bloomkit._core.KINDS["QuotientFilter"]
    page = page_of(kind)
    text = page.read_text(encoding="utf-8")
    assert check_kind(kind, text, "q.md", 1) == []
    wider = text.replace("|   68 |  4 | r:", "|   68 |  8 | r:")
    assert check_kind(kind, wider, "q.md", 1) == [
        'q.md "File layout", kind 6 (QuotientFilter), parameter r: width 8 at offset 68, '
        "the descriptor says 4"]
    renamed = text.replace("|   96 |  8 | count:", "|   96 |  8 | held:")
    (problem,) = check_kind(kind, renamed, "q.md", 1)
    assert "kind 6 (QuotientFilter), parameter count: the row at offset 96" in problem
    moved = text.replace("|   88 |  8 | max_load", "|   90 |  8 | max_load")
    assert check_kind(kind, moved, "q.md", 1) == [
        'q.md "File layout", kind 6 (QuotientFilter), parameter max_load: no row at offset 88']
    (problem,) = check_kind(kind, text, "q.md", 2)
    assert 'no (single) "### Kind 6" subsection' in problem
    (problem,) = check_kind(kind, text.replace("## File layout", "## Layout"), "q.md", 1)
    assert '0 "## File layout" sections' in problem
