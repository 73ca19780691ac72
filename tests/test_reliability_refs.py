"""Source lint: every requirement number ("R15", "R12-R15") cited anywhere in
src/, tests/, docs/, .ci/ or .github/ resolves to a ``### Rnn`` section of
docs/reliability.md, and every test that page names exists (issue #24)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = ROOT / "docs" / "reliability.md"
SCANNED = ("src", "tests", "docs", ".ci", ".github")
# Binary or generated files whose bytes may spell "R1" by chance.
SKIPPED_SUFFIXES = {".bkf", ".so", ".o", ".pyc", ".npy", ".parquet", ".gz", ".bin"}

# "R12-R15" and "R12..R15" cite the range; "R3" alone cites one.  \b keeps
# identifiers such as "BR2" or "R2D2" out.
CITE = re.compile(r"\bR(\d{1,3})(?:\s*(?:-|\.\.)\s*R(\d{1,3}))?\b")
SECTION = re.compile(r"^###\s+R(\d{1,3})\b", re.M)
NAMED_TEST = re.compile(r"`(tests/[\w/.-]+\.py)(?:::([\w:]+))?`")


def _sections() -> set[int]:
    return {int(n) for n in SECTION.findall(CATALOGUE.read_text(encoding="utf-8"))}


def _citations(text: str) -> set[int]:
    cited: set[int] = set()
    for m in CITE.finditer(text):
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        cited.update(range(lo, hi + 1) if lo <= hi <= lo + 40 else (lo, hi))
    return cited


def _sources() -> list[Path]:
    files = []
    for top in SCANNED:
        base = ROOT / top
        if not base.exists():
            continue
        for p in sorted(base.rglob("*")):
            if (p.is_file() and p.suffix not in SKIPPED_SUFFIXES
                    and "__pycache__" not in p.parts and "golden" not in p.parts
                    # build artefacts (pip install -e . writes src/bloomkit.egg-info)
                    and not any(part.endswith(".egg-info") for part in p.parts)):
                files.append(p)
    return files


def test_the_catalogue_has_sections() -> None:
    sections = _sections()
    assert {1, 8, 15, 28, 34} <= sections, sorted(sections)


def test_every_cited_requirement_resolves() -> None:
    sections = _sections()
    unresolved: dict[str, list[int]] = {}
    for path in _sources():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        missing = sorted(_citations(text) - sections)
        if missing:
            unresolved[str(path.relative_to(ROOT))] = missing
    assert not unresolved, f"cited but not in docs/reliability.md: {unresolved}"


def test_ranges_and_lookalikes() -> None:
    assert _citations("hostile input (R12-R15), R3; R8..R9") == {3, 8, 9, 12, 13, 14, 15}
    assert _citations("BR2 R2D2 xR3 r4") == set()


def test_every_named_test_exists() -> None:
    """A section that names `tests/x.py::Name` points at a real file that
    defines Name, so the page cannot quietly rot when tests move."""
    text = CATALOGUE.read_text(encoding="utf-8")
    wrong = []
    for m in NAMED_TEST.finditer(text):
        path = ROOT / m.group(1)
        if not path.is_file():
            wrong.append(m.group(0))
            continue
        if m.group(2):
            source = path.read_text(encoding="utf-8")
            for name in m.group(2).split("::"):
                if not re.search(rf"\b(?:def|class)\s+{re.escape(name)}\b|^{re.escape(name)}\s*=",
                                 source, re.M):
                    wrong.append(m.group(0))
    assert not wrong, f"docs/reliability.md names tests that do not exist: {wrong}"


def test_every_section_names_a_test_or_says_none() -> None:
    text = CATALOGUE.read_text(encoding="utf-8")
    parts = SECTION.split(text)[1:]
    for number, body in zip(parts[::2], parts[1::2], strict=True):
        assert "Proved by:" in body or "No test" in body, f"R{number} names no test"
