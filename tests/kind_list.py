"""The list of kinds the "for every kind" tests run over: the descriptors
(``bloomkit._core.KINDS``, one per kind in C), never a hand-kept list; and
the recipes those tests need, each kept beside its kind's own tests.

A generic test that needs to know how to drive a kind (how to construct
one, which method to time, which variants to write golden files of) reads
the kind's :class:`Recipe`: the kind's test module (``tests/test_<m>.py``
for the facade module ``bloomkit.<m>``, as the tests mirror the modules)
declares ``RECIPES = [Recipe(...)]``, and :func:`recipes` collects them.
Every field of a recipe but ``golden`` and ``merge`` must be given: a case,
or a str saying why that test does not take the kind (and which test covers
it instead); ``merge`` is checked against the descriptor's ``mergeable``.
:func:`assert_covers` then FAILS the generic test, naming the kind, for a
kind with no recipe.  So a new kind is covered by the generic tests through
its own test file, or they say what it needs.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bloomkit
from bloomkit import _core

Kind = Any  # bloomkit._core.Kind
TESTS = Path(__file__).resolve().parent


def descriptors() -> list[Kind]:
    """Every kind this build holds that has a class at ``bloomkit.<name>``
    (the Parquet index has its own reader, bloomkit.parquet), in id order."""
    return sorted((k for n, k in _core.KINDS.items() if hasattr(bloomkit, n)),
                  key=lambda k: k.id)


def names(where: Callable[[Kind], bool] = lambda k: True) -> list[str]:
    return [k.name for k in descriptors() if where(k)]


def classes(where: Callable[[Kind], bool] = lambda k: True) -> list[type[Any]]:
    return [getattr(bloomkit, n) for n in names(where)]


def loadable() -> list[Kind]:
    """Every kind a file can hold, the Parquet index included."""
    return sorted(_core.KINDS.values(), key=lambda k: k.id)


def assert_covers(table: Iterable[str], exempt: Mapping[str, str] | None = None,
                  where: Callable[[Kind], bool] = lambda k: True) -> None:
    """Every kind (``where`` selects) has a recipe in ``table`` (keys are class
    names, or ``Name_variant``) or an exemption with its reason."""
    have = {key.split("_")[0] for key in table} | set(exempt or {})
    missing = [n for n in names(where) if n not in have]
    assert missing == [], f"no recipe for {missing}: add one (or an exemption with its reason)"


# ---- the recipes --------------------------------------------------------------------------


#: the secret of the keyed golden files (tests/format/_manifest.py decodes it)
GOLDEN_SECRET = {"hex": "000102030405060708090a0b0c0d0e0f"}


def ior(f: Any, g: Any) -> None:
    """A ThreadSpec's ``unite``: fold g into f in place."""
    f |= g


@dataclass(frozen=True)
class ThreadSpec:
    """tests/test_threads.py (R31): how to build one structure for the hammer, and what
    its maintenance thread may do."""

    name: str  # the test id (a kind may have several: "scalable", "scalable-blocked")
    build: Callable[[Any], Any]  # key= -> a fresh object
    removes: bool = False  # remove/discard exist (and keep the others' keys)
    present: Callable[[Any, object], bool] = lambda f, k: k in f
    present_many: Callable[[Any, Any], list[bool]] = field(
        default=lambda f, ks: [bool(x) for x in f.contains_many(ks)]
    )
    unite: Callable[[Any, Any], object] | None = None  # maintenance: fold a sibling in


@dataclass(frozen=True)
class NumpyCase:
    """tests/test_numpy_keys.py (R34): the structure behind one small interface."""

    make: Callable[[], Any]
    add_one: Callable[[Any, Any], Any]
    add_many: Callable[[Any, Any], Any]
    has: Callable[[Any, Any], bool]
    state: Callable[[Any], bytes] = lambda obj: bytes(obj.to_bytes())
    distinct: bool = False  # a cuckoo filter stores a repeated key again: dedupe
    name: str = ""  # filled in by recipes()

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True)
class ArrowCase:
    """tests/test_arrow_keys.py: a batch add and a batch query (bools or counts)."""

    make: Callable[[], Any]
    add_many: Callable[[Any, Any], Any]
    query: Callable[[Any, Any], Any]
    distinct: bool = False
    name: str = ""  # filled in by recipes()
    state: Callable[[Any], bytes] = lambda obj: bytes(obj.to_bytes())

    def __repr__(self) -> str:
        return self.name


def numpy_filter(make: Callable[[], Any], *, distinct: bool = False) -> NumpyCase:
    """A filter's NumpyCase: add, add_many and ``in``."""
    return NumpyCase(make, lambda f, k: f.add(k), lambda f, ks: f.add_many(ks),
                     lambda f, k: k in f, distinct=distinct)


def arrow_filter(make: Callable[[], Any], *, distinct: bool = False) -> ArrowCase:
    """A filter's ArrowCase: add_many and contains_many."""
    return ArrowCase(make, lambda f, ks: f.add_many(ks), lambda f, ks: f.contains_many(ks),
                     distinct)


@dataclass(frozen=True)
class Recipe:
    """How the generic tests drive one kind (``name``: its class at ``bloomkit.<name>``).

    A str in place of a case is an exemption: why that test does not take the kind."""

    name: str
    #: tests/test_percall.py: (method, arguments) of the per-key call whose
    #: specialisation is checked, one per calling convention
    hot: tuple[str, str]
    #: tests/test_threads.py: the hammer's builds
    threads: Sequence[ThreadSpec] | str
    #: tests/test_persist_rewrites.py (R32): variant ("" for one) -> the code
    #: that constructs a small instance in the child (header rewritten field by field)
    rewrites: Mapping[str, str] | str
    #: tests/test_numpy_keys.py and tests/test_arrow_keys.py
    numpy: NumpyCase | str
    arrow: ArrowCase | str
    #: tests/format/make_golden.py: golden file stem -> build spec
    #: (tests/format/_manifest.py's form); written once, never regenerated
    golden: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: tests/test_cli.py: Python's own merge of two instances of equal parameters,
    #: which `bloomkit merge` must equal byte for byte (None: the class does not
    #: merge; the test checks this against the descriptor's mergeable)
    merge: Callable[[Any, Any], Any] | None = None


def _test_module(cls: type) -> str:
    return "test_" + cls.__module__.rsplit(".", 1)[-1]


@functools.cache
def recipes() -> dict[str, Recipe]:
    """Every recipe, by class name: from the test module of every public class's
    facade module (the kinds, and public structures outside the descriptors such as
    TopK) that declares RECIPES."""
    modules = {_test_module(obj) for obj in (getattr(bloomkit, n) for n in bloomkit.__all__)
               if isinstance(obj, type) and obj.__module__.startswith("bloomkit.")}
    found: dict[str, Recipe] = {}
    for mod in sorted(modules):
        if not (TESTS / f"{mod}.py").exists():
            continue
        for r in getattr(importlib.import_module(mod), "RECIPES", ()):
            assert r.name not in found, f"two recipes for {r.name}"
            found[r.name] = dataclasses.replace(
                r, numpy=_named(r.numpy, r.name), arrow=_named(r.arrow, r.name))
    return found


def _named(case: Any, name: str) -> Any:
    return case if isinstance(case, str) else dataclasses.replace(case, name=name)


def cases(what: str) -> tuple[dict[str, Any], dict[str, str]]:
    """(class name -> the ``what`` field, class name -> exemption reason) over every recipe."""
    have: dict[str, Any] = {}
    exempt: dict[str, str] = {}
    for name, r in recipes().items():
        value = getattr(r, what)
        (exempt if isinstance(value, str) else have)[name] = value
    return have, exempt
