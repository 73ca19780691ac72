"""Source lint of the Python tree (src/bloomkit), issue #30: modules stay small
enough to read in one sitting, and each keeps its underscore names to itself.

- no module is past 800 lines (docs/building.md, "Layout");
- no module uses another bloomkit module's private name: neither
  ``from .x import _name`` nor ``x._name`` on an imported bloomkit module.
  A helper another module needs gets a plain name in the module that owns
  it (the packages' __init__ files decide what is public outside).
  Underscore *modules* (``_core``, ``_locking``, ``_filemerge``, ...) are
  private to the package and may be imported inside it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "src" / "bloomkit"
MODULES = sorted(p for p in ROOT.rglob("*.py") if "__pycache__" not in p.parts)
MAX_LINES = 800


def _dotted(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package(path: Path) -> str:
    name = _dotted(path)
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _resolve(path: Path, node: ast.ImportFrom) -> str:
    """The absolute module an ImportFrom reads from."""
    if node.level == 0:
        return node.module or ""
    base = _package(path).split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _is_module(dotted: str) -> bool:
    rel = Path(*dotted.split(".")[1:]) if "." in dotted else Path()
    where = ROOT / rel
    return (where.with_suffix(".py").exists() or (where / "__init__.py").exists()
            or any(where.parent.glob(where.name + ".*.so")) or where.with_suffix(".pyi").exists())


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _borrowed_private_names(path: Path, text: str | None = None) -> list[str]:
    """What the module at ``path`` (its file, or ``text`` as if it were
    there) takes of other bloomkit modules' underscore names."""
    tree = ast.parse(path.read_text(encoding="utf-8") if text is None else text)
    found: list[str] = []
    modules: set[str] = set()  # local names bound to bloomkit modules
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _resolve(path, node)
            if not source.startswith("bloomkit"):
                continue
            for alias in node.names:
                full = f"{source}.{alias.name}"
                if _is_module(full):
                    modules.add(alias.asname or alias.name)
                elif _private(alias.name):
                    found.append(f"{node.lineno}: from {source} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("bloomkit"):
                    modules.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in modules and _private(node.attr)):
            found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_the_lint_sees_the_tree() -> None:
    # guard against a walk that silently finds nothing
    names = {_dotted(p) for p in MODULES}
    assert {"bloomkit", "bloomkit.persist", "bloomkit.persist.mapped", "bloomkit.cli",
            "bloomkit.parquet.sbbf", "bloomkit.topk"} <= names
    assert _is_module("bloomkit._core") and _is_module("bloomkit.persist.kinds")
    assert not _is_module("bloomkit.persist.KINDS")


def test_the_lint_finds_a_borrowed_private_name() -> None:
    # the checker itself, on a module that borrows in both ways (and imports
    # an underscore module, which is allowed)
    where = ROOT / "cli" / "commands.py"
    text = ("from ..persist.kinds import _hidden\nfrom .. import _core, persist\n"
            "persist._KINDS\n_core.KINDS\n")
    imp = ast.parse(text).body[0]
    assert isinstance(imp, ast.ImportFrom)
    assert _resolve(where, imp) == "bloomkit.persist.kinds"
    assert _borrowed_private_names(where, text) == [
        "1: from bloomkit.persist.kinds import _hidden", "3: persist._KINDS"]


def test_no_module_past_800_lines() -> None:
    long = {str(p.relative_to(ROOT)): n for p in MODULES
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, f"split these by concern: {long}"


def test_no_module_uses_another_modules_private_names() -> None:
    borrowed = {str(p.relative_to(ROOT)): names for p in MODULES
                if (names := _borrowed_private_names(p))}
    assert borrowed == {}, borrowed
