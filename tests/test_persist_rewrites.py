"""R32: a shared map's header is read once.  After a valid ``open(path, "r+")``
another process may rewrite any header or parameter field in place (a
hostile or buggy writer, a torn write): this process must not crash, hang
or touch memory outside the map, whatever it then does with the object.

Every kind is opened read-write; for every 2-, 4- and 8-byte aligned field
of the fixed header and of the kind's parameter block, a second descriptor
``os.pwrite``s hostile values over it (the rewrite of #23.6 was 0xFFFFFFFF
over the cuckoo ``stash_count``), then add / discard / contains / count /
len / the batch paths / verify / close run.  Exceptions are fine (verify
will usually say "in use" or "corrupt"); a segfault or a hang is not.  The
work runs in a subprocess per kind, so a crash fails that test case and
names the last field written instead of killing pytest.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import bloomkit
import kind_list

SRC = str(Path(bloomkit.__file__).resolve().parents[1])

# Constructors of a small, non-empty instance of every kind (run in the child), from
# each kind's recipe: "Name" or "Name_variant".
_REWRITES, _EXEMPT = kind_list.cases("rewrites")
BUILDERS = {f"{name}_{variant}" if variant else name: code
            for name, variants in _REWRITES.items() for variant, code in variants.items()}


def test_the_builders_cover_every_kind() -> None:
    """A new kind needs a builder in its recipe (its header rewritten field by field)."""
    kind_list.assert_covers(BUILDERS, _EXEMPT)


CHILD = r"""
import os, struct, sys
import bloomkit

path = sys.argv[1]
obj = BUILD
fill = getattr(obj, "add", None) or obj.record
for i in range(400):  # past capacity where a kind allows it: a stash, links
    try:
        fill(i)
    except Exception:
        break
obj.save(path)
original = open(path, "rb").read()
(header_len,) = struct.unpack_from("<I", original, 20)
(params_len,) = struct.unpack_from("<I", original, 48)
end = 64 + params_len
VALUES = {  # R15's integers; as f64: NaN, +inf, -0.0, 5e-324
    2: [0, 1, 0x8000, 0xFFFF],
    4: [0, 1, 9, 0x80000000, 0xFFFFFFFF],
    8: [0, 1, 2**32, 2**63 - 1, 2**64 - 1, 0x7FF8000000000000, 0x7FF0000000000000,
        0x8000000000000000],
}
FMT = {2: "<H", 4: "<I", 8: "<Q"}
KEYS = list(range(0, 600, 7)) + ["absent", b"x"]


def exercise(f, copies=1):
    for op in ("add", "record", "discard", "remove", "count", "estimate", "__contains__"):
        m = getattr(f, op, None)
        if m is None:
            continue
        for k in KEYS[:12]:
            try:
                m(k)
            except Exception:
                pass
    for op in ("add_many", "record_many", "contains_many", "estimate_many"):
        m = getattr(f, op, None)
        if m is not None:
            try:
                m(KEYS)
            except Exception:
                pass
    for op in (len, repr, lambda g: g.load_factor, lambda g: g.to_bytes(), lambda g: g.copy(),
               lambda g: g.estimate_count(), lambda g: g.verify() if g.mapped else None):
        try:
            op(f)
        except Exception:
            pass
    if copies:  # a copy re-reads the header it copied: it must be sound too
        try:
            c = f.copy()
        except Exception:
            return
        exercise(c, copies - 1)
        for op in ("union", "merge", "__or__", "__ior__", "__add__"):
            m = getattr(c, op, None)
            if m is not None:
                try:
                    m(f)
                except Exception:
                    pass


cases = 0
for size in (2, 4, 8):
    for off in range(8, end, size):  # the magic (0..8) is never re-read
        for value in VALUES[size]:
            with open(path, "wb") as out:
                out.write(original)
            try:
                f = bloomkit.open(path, "r+")
            except TypeError:  # a kind that cannot be mapped for writing
                f = bloomkit.open(path, "r")
            fd = os.open(path, os.O_RDWR)
            try:
                sys.stderr.write(f"field @{off} size {size} := {value:#x}\n")
                sys.stderr.flush()
                os.pwrite(fd, struct.pack(FMT[size], value), off)
            finally:
                os.close(fd)
            exercise(f)
            try:
                f.close()
            except Exception:
                pass
            cases += 1
print(cases)
"""


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_rewritten_shared_header_never_crashes(kind: str, tmp_path: Path) -> None:
    code = textwrap.dedent(CHILD).replace("BUILD", BUILDERS[kind], 1)
    env = dict(os.environ, PYTHONPATH=SRC)
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "f.bkf")], env=env,
        capture_output=True, text=True, timeout=600,
    )
    last = proc.stderr.strip().splitlines()[-1:] or ["(none)"]
    assert proc.returncode == 0, (
        f"{kind}: child exited with {proc.returncode} after {last[0]}\n{proc.stderr[-2000:]}"
    )
    assert int(proc.stdout) > 100  # every field was rewritten
