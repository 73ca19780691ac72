"""Finding the Parquet files of a lake: one rule for every face (R52).

``probe``, ``may_contain``, ``build_index``, ``update`` and an index's
staleness check all name a lake the same ways: a file, a directory (every
``*.parquet`` below it) or a glob (``**`` for any depth).  A lake directory
is untrusted input (issue #34): two symlinks to itself (``a -> .``,
``b -> .``) made ``glob("**", recursive=True)`` run for minutes and report
one file 41 times.  So the walk here is our own:

- each real directory is entered once (``(st_dev, st_ino)`` of its target,
  so a symlink loop ends at once and a directory reached twice is walked
  once), and each real file is listed once (its ``(st_dev, st_ino)``);
- only regular files are listed (a FIFO, socket or device named
  ``x.parquet`` is skipped; :func:`bloomkit.parquet.footer.open_regular`
  refuses one named directly, without blocking);
- an unreadable directory is skipped, as ``glob`` does;
- names starting with ``.`` match only a pattern part that starts with
  ``.`` (``glob``'s rule), so ``_SUCCESS`` and ``.crc`` files stay out.

Cost: one ``scandir`` per real directory and one ``stat`` per entry, so
O(entries) whatever the links.
"""

from __future__ import annotations

import fnmatch
import glob as _glob
import os
import re
import stat
from collections.abc import Iterable

__all__ = ["expand", "find", "is_pattern"]

PathLike = str | os.PathLike[str]


def is_pattern(spec: str) -> bool:
    return _glob.has_magic(spec)


def _split(pattern: str) -> tuple[str, list[str]]:
    """(root, parts): the leading non-magic directories, and the rest split
    into path segments."""
    parts = re.split(r"[/\\]" if os.sep == "\\" else "/", pattern)
    root: list[str] = []
    while len(parts) > 1 and not _glob.has_magic(parts[0]):
        root.append(parts.pop(0))
    if not root:
        return ("", parts)
    top = "/".join(root) if root != [""] else "/"
    if top.startswith("//"):
        top = top[1:]
    return (top if top else "/", parts)


def _match(parts: list[str], names: tuple[str, ...]) -> bool:
    """Whether the relative path ``names`` matches the segments ``parts``."""
    if not parts:
        return not names
    head = parts[0]
    if head == "**":
        # zero or more directories, none hidden (glob's rule)
        if _match(parts[1:], names):
            return True
        return bool(names) and not names[0].startswith(".") and _match(parts, names[1:])
    if not names:
        return False
    n = names[0]
    if n.startswith(".") and not head.startswith("."):
        return False
    return fnmatch.fnmatchcase(n, head) and _match(parts[1:], names[1:])


def find(pattern: str) -> list[str]:
    """The regular files matching ``pattern`` (a glob, ``**`` for any depth),
    sorted, each real file once, every real directory entered once."""
    root, parts = _split(pattern)
    deep = "**" in parts
    limit = len(parts)  # segments below root a match can have without **
    start = root or "."
    out: list[tuple[str, str]] = []
    seen_dirs: set[tuple[int, int]] = set()
    seen_files: set[tuple[int, int]] = set()
    try:
        st = os.stat(start)
    except OSError:
        return []
    if not stat.S_ISDIR(st.st_mode):
        return []
    seen_dirs.add((st.st_dev, st.st_ino))
    stack: list[tuple[str, tuple[str, ...]]] = [(start, ())]
    while stack:
        d, rel = stack.pop()
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:  # unreadable, gone, or not a directory after all
            continue
        for e in entries:
            names = (*rel, e.name)
            try:
                est = e.stat()  # follows symlinks: the target decides
            except OSError:  # a dangling link, or no permission
                continue
            key = (est.st_dev, est.st_ino)
            if stat.S_ISDIR(est.st_mode):
                if key in seen_dirs or (not deep and (
                        len(names) >= limit or not _match(parts[len(rel):len(names)], (e.name,)))):
                    continue
                if deep and e.name.startswith(".") and not any(
                        p.startswith(".") for p in parts):
                    continue
                seen_dirs.add(key)
                stack.append((e.path, names))
            elif stat.S_ISREG(est.st_mode) and key not in seen_files and _match(parts, names):
                seen_files.add(key)
                shown = os.path.join(root, *names) if root else os.path.join(*names)
                out.append((shown, shown))
    return sorted(p for p, _ in out)


def expand(paths_or_glob: PathLike | Iterable[PathLike], *, empty_glob_ok: bool = True
           ) -> tuple[list[str], list[str]]:
    """(files, patterns) of a lake named by a path, a directory, a glob or a
    list of them: a directory stands for ``DIR/**/*.parquet`` and, like a
    glob, is returned among the patterns (an index records them to notice
    files added later).  Each real file is listed once, in the order given
    (sorted within a glob).  A glob matching nothing is an empty part of the
    lake, or FileNotFoundError when ``empty_glob_ok`` is false."""
    items = ([paths_or_glob] if isinstance(paths_or_glob, (str, os.PathLike))
             else list(paths_or_glob))
    files: list[str] = []
    patterns: list[str] = []
    for p in items:
        s = os.fspath(p)
        if os.path.isdir(s):
            s = os.path.join(s, "**", "*.parquet")
        if is_pattern(s):
            patterns.append(s)
            hits = find(s)
            if not hits and not empty_glob_ok:
                raise FileNotFoundError(f"no file matches {s!r}")
            files.extend(hits)
        else:
            files.append(s)
    seen: set[object] = set()
    out = []
    for f in files:
        try:
            st = os.stat(f)
            key: object = (st.st_dev, st.st_ino)
        except OSError:
            key = os.path.abspath(f)  # missing: the reader says so, naming it
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out, patterns
