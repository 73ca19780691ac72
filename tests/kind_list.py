"""The list of kinds the "for every kind" tests run over: the descriptors
(``bloomkit._core.KINDS``, one per kind in C), never a hand-kept list.

A test that needs a per-kind recipe (how to construct one, which method to
time) keeps a table keyed by class name and checks it with
:func:`assert_covers`: a kind the table lacks FAILS the test (with the
kind's name), unless the table exempts it with a reason.  So a new kind is
covered by the generic tests, or they say what it needs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import bloomkit
from bloomkit import _core

Kind = Any  # bloomkit._core.Kind


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
