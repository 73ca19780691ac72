"""The package is "Typing :: Typed": mypy checks the files of tests/typing/.

Each file marks its expectations on the line they concern: ``# N: <type>``
(mypy must reveal exactly that type; ``K`` stands for the key union
bloomkit.Key) and ``# E: <code>`` (mypy must report that error code).  Any
other error or note fails, so a constructor falling back to ``Any`` (every
``reveal_type`` changes) or a key parameter widened back to ``object`` (the
expected errors disappear) is caught here.  The source tree's stubs are
checked (``mypy_path`` = src), not whatever bloomkit is installed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api", reason="the typing tests need mypy (the test extra)")

ROOT = Path(__file__).resolve().parent.parent
CASES = sorted((ROOT / "tests" / "typing").glob("check_*.py"))
KEY = "str | bytes | bytearray | memoryview[int] | typing.SupportsIndex"
_MARK = re.compile(r"\S  # ([NE]): (.+?)\s*$")  # an inline comment after code
_OUT = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): (?P<kind>error|note): (?P<text>.*)$")


def _expected(path: Path) -> set[tuple[int, str, str]]:
    out = set()
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        m = _MARK.search(line)
        if m:
            kind, what = m.groups()
            if kind == "N":
                what = re.sub(r"\bK\b", KEY, what)
            out.add((lineno, kind, what))
    return out


def _reported(stdout: str, path: Path) -> set[tuple[int, str, str]]:
    out = set()
    for line in stdout.splitlines():
        m = _OUT.match(line)
        if not m or Path(m["path"]).name != path.name:
            continue
        text = m["text"]
        if m["kind"] == "note":
            r = re.fullmatch(r'Revealed type is "(.*)"', text)
            if r is None:
                continue  # the overload listings that follow an error
            out.add((int(m["line"]), "N", r[1]))
        else:
            code = re.search(r"\[([a-z-]+)\]$", text)
            out.add((int(m["line"]), "E", code[1] if code else text))
    return out


def test_cases_exist() -> None:
    assert CASES, "tests/typing/check_*.py not found"


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_mypy_expectations(path: Path, tmp_path: Path) -> None:
    config = tmp_path / "mypy.ini"
    config.write_text(f"[mypy]\nstrict = True\nmypy_path = {ROOT / 'src'}\n")
    stdout, stderr, status = mypy_api.run([
        "--config-file", str(config), "--cache-dir", str(tmp_path / "cache"),
        "--show-error-codes", "--hide-error-context", "--no-error-summary",
        "--no-color-output", "--no-pretty", str(path),
    ])
    assert "error: " not in stderr and status in (0, 1), f"mypy failed to run:\n{stderr}{stdout}"
    expected, reported = _expected(path), _reported(stdout, path)
    missing = sorted(expected - reported)
    unexpected = sorted(reported - expected)
    assert not missing and not unexpected, (
        f"{path.name}: mypy disagrees with the # N: / # E: marks\n"
        f"expected but not reported: {missing}\nreported but not expected: {unexpected}\n"
        f"mypy output:\n{stdout}"
    )
