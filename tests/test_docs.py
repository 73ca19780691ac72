"""The documentation runs: README.md and docs/*.md cannot drift from the code.

The conventions (docs/building.md, "Documentation that runs"):

- Every fenced ```python block runs, blocks of one file in order in one
  namespace, in a scratch directory where ``benchmarks/`` and
  ``examples/`` of this checkout are visible.  A block that cannot run (a
  signature, a server it needs) is preceded by ``<!-- not-run: reason -->``.
- ``expression  # -> text`` is a shown result: ``repr`` or ``str`` of the
  value must be ``text`` exactly; ``# -> ~0.00819`` compares a number
  rounded to the decimals shown.  Text after two spaces is a comment.
- ``<!-- output-of: python path args -->`` before a fenced block quotes
  that command's output: the command runs and every line must match
  (``...`` in a line matches anything, for timings; a line of only ``...``
  matches any number of lines, such as the machine block of a benchmark).
- Every ``python benchmarks/...`` or ``python examples/...`` command named
  anywhere works as written after the README's set-up: the script exists
  and ``--help`` runs (no ``PYTHONPATH=src``, which needs an in-place
  build).

A failure names the file and the line of the block.
"""

from __future__ import annotations

import ast
import contextlib
import io
import math
import os
import re
import runpy
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^(`{3,})(\S*)\s*$")
_MARKER = re.compile(r"^<!--\s*(not-run|output-of):\s*(.*?)\s*-->\s*$")
_ARROW = re.compile(r"#\s->\s(.*?)(?:\s{2}.*)?$")
_COMMAND = re.compile(r"python3? ((?:benchmarks|examples)/[\w./-]+\.py)")


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    marker: str | None  # "not-run" / "output-of"
    argument: str  # the marker's reason or command

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def parse(path: Path) -> list[Block]:
    """The fenced blocks of a markdown file, with the marker comment before each."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m.group(1), m.group(2), i
        i += 1
        body: list[str] = []
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i])
            i += 1
        i += 1
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        mm = _MARKER.match(lines[j]) if j >= 0 else None
        blocks.append(Block(path, start + 1, lang, "\n".join(body) + "\n",
                            mm.group(1) if mm else None, mm.group(2) if mm else ""))
    return blocks


ALL_BLOCKS = [b for p in DOCS for b in parse(p)]
DOCS_WITH_CODE = [p for p in DOCS
                  if any(b.lang == "python" and b.marker != "not-run" for b in parse(p))]
OUTPUT_BLOCKS = [b for b in ALL_BLOCKS if b.marker == "output-of"]


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with this checkout's benchmarks/ and examples/ in it."""
    for name in ("benchmarks", "examples"):
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ---- shown results: `expr  # -> text` ------------------------------------------


def _matches(value: Any, expected: str) -> bool:
    if expected.startswith("~"):
        text = expected[1:]
        decimals = len(text.split(".")[1]) if "." in text else 0
        try:
            return math.isclose(round(float(value), decimals), float(text), abs_tol=0.0)
        except (TypeError, ValueError):
            return False
    return expected in (repr(value), str(value))


def _run_block(block: Block, namespace: dict[str, Any]) -> None:
    source = block.text
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise AssertionError(
            f"{block.where}: the python block does not parse ({exc}); fix it or mark it "
            "<!-- not-run: reason -->"
        ) from exc
    lines = source.splitlines()
    arrows = {n: m.group(1) for n, line in enumerate(lines, 1)
              if (m := _ARROW.search(line)) is not None}
    last_on_line = {stmt.end_lineno: stmt for stmt in tree.body}
    for n in arrows:
        stmt = last_on_line.get(n)
        assert isinstance(stmt, ast.Expr), (
            f"{block.where}, block line {n}: '# -> ' must follow an expression "
            f"(the last statement on its line): {lines[n - 1].strip()!r}"
        )
    filename = f"<{block.where}>"
    for stmt in tree.body:
        line = block.line + stmt.lineno  # the doc's line number
        expected = arrows.get(stmt.end_lineno or stmt.lineno)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                if expected is not None and isinstance(stmt, ast.Expr):
                    code = compile(ast.Expression(stmt.value), filename, "eval")
                    value = eval(code, namespace)
                else:
                    module = ast.Module(body=[stmt], type_ignores=[])
                    exec(compile(module, filename, "exec"), namespace)
                    continue
        except Exception as exc:
            raise AssertionError(
                f"{block.path.relative_to(ROOT)}:{line} (block at line {block.line}) raised "
                f"{type(exc).__name__}: {exc}\n    {lines[stmt.lineno - 1].strip()}"
            ) from exc
        assert _matches(value, expected), (
            f"{block.path.relative_to(ROOT)}:{line} (block at line {block.line}) shows "
            f"{expected!r}, the code gives {value!r}\n    {lines[stmt.lineno - 1].strip()}"
        )


@pytest.mark.parametrize("path", DOCS_WITH_CODE, ids=lambda p: str(p.relative_to(ROOT)))
def test_python_blocks_run_and_show_their_results(path: Path, scratch: Path) -> None:
    namespace: dict[str, Any] = {"__name__": "__doc__"}
    for block in parse(path):
        if block.lang == "python" and block.marker != "not-run":
            _run_block(block, namespace)


def test_every_marker_is_explained_and_placed() -> None:
    """not-run needs a reason and a python block; output-of a command and a quote."""
    problems = []
    for b in ALL_BLOCKS:
        if b.marker == "not-run" and (b.lang != "python" or len(b.argument.split()) < 2):
            problems.append(f"{b.where}: not-run needs a reason (2+ words) before a python block")
        if b.marker == "output-of" and (b.lang == "python"
                                        or not _COMMAND.match(b.argument)):
            problems.append(f"{b.where}: output-of needs `python benchmarks|examples/...`")
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        n_markers = len(re.findall(r"^<!--\s*(?:not-run|output-of):", text, re.M))
        n_placed = sum(1 for b in parse(path) if b.marker)
        if n_markers != n_placed:
            problems.append(f"{path.relative_to(ROOT)}: a marker comment not directly "
                            "before a fenced block")
    assert not problems, "\n".join(problems)


def test_the_arrow_convention_checks_something() -> None:
    shown = sum(1 for b in ALL_BLOCKS if b.lang == "python" and b.marker != "not-run"
                for line in b.text.splitlines() if _ARROW.search(line))
    assert shown >= 20, f"only {shown} '# -> ' results in the docs: the conventions rotted?"
    assert OUTPUT_BLOCKS, "no <!-- output-of: ... --> block left in the docs"


# ---- quoted outputs: <!-- output-of: python script args --> ------------------------


def _line_matches(expected: str, got: str) -> bool:
    pattern = ".*?".join(re.escape(part) for part in expected.rstrip().split("..."))
    return re.fullmatch(pattern, got.rstrip()) is not None


def _lines_match(want: list[str], got: list[str]) -> bool:
    """Line by line; a line that is only ``...`` stands for any number of lines
    (the machine block a benchmark prints first, say)."""
    if not want:
        return not got
    if want[0].strip() == "...":
        return any(_lines_match(want[1:], got[i:]) for i in range(len(got) + 1))
    return bool(got) and _line_matches(want[0], got[0]) and _lines_match(want[1:], got[1:])


@pytest.mark.slow
@pytest.mark.parametrize("block", OUTPUT_BLOCKS,
                         ids=lambda b: f"{b.where} {b.argument.split()[1]}")
def test_quoted_outputs_are_the_real_output(block: Block, scratch: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    argv = shlex.split(block.argument)[1:]
    script = ROOT / argv[0]
    monkeypatch.setattr(sys, "argv", [str(script), *argv[1:]])
    monkeypatch.syspath_prepend(str(script.parent))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            runpy.run_path(str(script), run_name="__main__")
        except SystemExit as exc:  # sys.exit() at the end of a script
            assert exc.code in (None, 0), f"`{block.argument}` exited with {exc.code}"
    got = [line for line in out.getvalue().splitlines() if line.strip()]
    want = [line for line in block.text.splitlines() if line.strip()]
    if _lines_match(want, got):
        return
    diff = [f"  doc: {w}\n  now: {g}" for w, g in zip(want, got, strict=False)
            if "..." not in w and not _line_matches(w, g)]
    raise AssertionError(
        f"{block.where} quotes the output of `{block.argument}`, which now differs "
        f"(update the doc from the real output):\n" + "\n".join(diff)
        + f"\n--- documented ({len(want)} lines) ---\n" + "\n".join(want)
        + f"\n--- real output ({len(got)} lines) ---\n" + "\n".join(got)
    )


# ---- documented commands -------------------------------------------------------


def _documented_commands() -> dict[str, list[str]]:
    """script path -> where it is named ("docs/x.md:12")."""
    out: dict[str, list[str]] = {}
    for path in DOCS:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in _COMMAND.finditer(line):
                out.setdefault(m.group(1), []).append(f"{path.relative_to(ROOT)}:{n}")
    return out


COMMANDS = _documented_commands()


def test_no_command_needs_pythonpath_src() -> None:
    """After the README's `pip install .` there is no in-place build: PYTHONPATH=src
    would import sources without their C extension."""
    bad = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
           for p in DOCS
           for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
           if re.search(r"PYTHONPATH=src python3? (benchmarks|examples)/", line)]
    assert not bad, "commands that fail after the README's set-up:\n" + "\n".join(bad)


def test_commands_were_found() -> None:
    assert len(COMMANDS) >= 10, sorted(COMMANDS)


@pytest.mark.parametrize("script", sorted(COMMANDS))
def test_documented_script_exists_and_answers_help(script: str) -> None:
    where = ", ".join(COMMANDS[script])
    path = ROOT / script
    assert path.is_file(), f"{script} (named in {where}) does not exist"
    env = dict(os.environ)
    import bloomkit  # the same bloomkit as the tests: the checkout's or the installed one

    pkg_parent = str(Path(bloomkit.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([pkg_parent, *filter(None, [env.get("PYTHONPATH")])])
    proc = subprocess.run([sys.executable, str(path), "--help"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    missing = re.search(r"ModuleNotFoundError: No module named '([\w.]+)'", proc.stderr)
    if proc.returncode and missing and not missing.group(1).startswith("bloomkit"):
        pytest.skip(f"{script} needs {missing.group(1)} (an optional extra)")
    assert proc.returncode == 0, (
        f"`python {script} --help` (named in {where}) failed with exit code "
        f"{proc.returncode}:\n{proc.stderr[-2000:]}"
    )


# the parameters a row of the README's space table may name besides its figures
_SPACE_PARAMETERS = {"0.1%", "1%", "0.001", "0.01", "0.9"}
_SPACE_NUMBER = re.compile(r"[+]?\d+\.\d+[x%]?|\d{1,3}(?:,\d{3})+|\d+ (?:KiB|bytes)|\d+%")


def test_readme_space_table_is_computed() -> None:
    """Every number of the README's "space at 1% (n = 10^6)" column is what
    benchmarks/space_table.py computes from the constructors (or quotes from
    a benchmark output in the doc it names), and every computed one is there:
    the table once said QuotientFilter 11.1 bits/key (18.87 at n = 10^6) and
    BlockedBloomFilter 12.10 at 2^-8 (12.13)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import space_table
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    computed = space_table.rows()
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if "space at 1% (n = 10^6)" in line)
    seen: set[str] = set()
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        _, _need, use, space, _ = (c.strip() for c in line.split("|"))
        names = [n for n in re.findall(r"`(\w+)", use) if n in computed]
        if not names:
            assert not _SPACE_NUMBER.findall(space), f"no computed row for {use}: {space}"
            continue
        name = names[0]
        seen.add(name)
        rest = space
        for value in sorted(computed[name], key=len, reverse=True):
            assert value in rest, f"README {name}: {space!r} lacks the computed {value!r}"
            rest = rest.replace(value, " ", 1)
        stray = [t for t in _SPACE_NUMBER.findall(rest) if t not in _SPACE_PARAMETERS]
        assert not stray, f"README {name}: {stray} computed by nothing ({space!r})"
    assert seen == set(computed)
    for quoted in space_table.QUOTED.values():
        for doc, figure in quoted.values():
            assert figure in (ROOT / doc).read_text(encoding="utf-8"), (doc, figure)
