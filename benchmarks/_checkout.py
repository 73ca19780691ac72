"""Import bloomkit from this checkout's in-place build when there is one.

``import _checkout`` first in a benchmark (run as ``python benchmarks/x.py``,
so this directory is on sys.path): after ``python setup.py build_ext
--inplace`` the benchmark measures the checkout's sources; after the
README's ``pip install .`` (no in-place build) it uses the installed
package.  No ``PYTHONPATH=src`` is needed either way: with it and no in-place
build, ``import bloomkit`` would find sources without their C extension.
"""

from __future__ import annotations

import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
if any((SRC / "bloomkit" / f"_core{suffix}").exists() for suffix in EXTENSION_SUFFIXES):
    sys.path.insert(0, str(SRC))
