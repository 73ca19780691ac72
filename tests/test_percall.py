"""The per-call cost of the public classes (issue #21, item 1), locked in by structure.

``f.add(k)`` on a public class (a Python subclass of a C type) used to cost 7-13 ns more than
on the C type: CPython's specialised call of a C method checks that the instance's type IS
the method's class, so every call on a subclass instance took the generic path.  Since the
fix, ``Persistent.__init_subclass__`` gives every class its own method descriptors of the
same C functions (``_core.own_methods``, module.c).  These tests check the structure that
makes the calls fast (no timing: benchmarks/percall.py measures it): no instance ``__dict__``,
the hot methods are C method descriptors owned by the class itself, ``key in f`` is the C
slot, and, on CPython 3.11+, the interpreter specialises the call on a public instance
exactly as on the C base.
"""

from __future__ import annotations

import dis
import inspect
import pickle
import platform
import sys
import types
from collections.abc import Callable
from typing import Any

import pytest

import bloomkit
import kind_list
from bloomkit import _core, persist

HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE
C_BASES = tuple(getattr(_core, n) for n in dir(_core) if n.endswith("Base")
                and isinstance(getattr(_core, n), type))
PUBLIC = sorted((c for c in (getattr(bloomkit, n) for n in bloomkit.__all__)
                 if isinstance(c, type) and issubclass(c, C_BASES)), key=lambda c: c.__name__)


def c_base(cls: type) -> type:
    return next(t for t in cls.__mro__ if not t.__flags__ & HEAPTYPE)


def public_methods(base: type) -> list[str]:
    """The C base's public instance methods (what own_methods re-binds)."""
    return sorted(n for n, v in vars(base).items()
                  if isinstance(v, types.MethodDescriptorType) and not n.startswith("_"))


def make(cls: type) -> Any:
    """A small instance with a few keys in it."""
    keys = list(range(200))
    if cls is bloomkit.BinaryFuseFilter:
        return cls(keys)
    f = cls(256, 4) if cls is bloomkit.CountMinSketch else cls(1000)
    if cls is bloomkit.TinyLFU:
        f.record_many(keys)
    elif cls is bloomkit.TopK:
        f.update(keys)
    else:
        f.add_many(keys)
    return f


def base_twin(f: Any) -> Any:
    """An instance of the bare C base type with f's state."""
    base = c_base(type(f))
    if isinstance(f, bloomkit.TopK):  # no state format: built from its parts
        return base(f.k, f.sketch)
    return base.from_bytes(f.to_bytes())  # type: ignore[attr-defined]


# Known exceptions, kept exact so they cannot grow silently: none since SlidingBloomFilter's
# clock, early-shift flag and SlidingWindowWarning moved into py_sliding.c (issue #21 item 1).
FACADE_SLOTS: dict[str, tuple[str, ...]] = {}
# C methods a Python class overrides (its own or a mixin's function): the
# Bloom filters' update takes filters as well as keys (bloomkit/_setops.py)
PY_OVERRIDES: dict[str, set[str]] = {"BloomFilter": {"update"},
                                     "BlockedBloomFilter": {"update"},
                                     "CuckooFilter": {"update", "intersection"}}


def test_every_public_structure_class_is_covered() -> None:
    names = {c.__name__ for c in PUBLIC}
    assert set(kind_list.names()) <= names
    assert set(persist.kinds.KINDS.values()) <= set(PUBLIC)


@pytest.mark.parametrize("cls", PUBLIC, ids=lambda c: c.__name__)
class PublicClassStructureTests:
    def test_every_python_class_in_the_mro_has_empty_slots(self, cls: type) -> None:
        """A __dict__ anywhere above would give instances one (bigger objects, and a
        dict check on every method lookup)."""
        for t in cls.__mro__:
            if t.__flags__ & HEAPTYPE:
                want = FACADE_SLOTS.get(t.__name__, ()) if t is cls else ()
                assert vars(t).get("__slots__") == want, t.__qualname__
        assert cls.__dictoffset__ == 0
        assert not hasattr(make(cls), "__dict__")

    def test_hot_methods_are_the_classes_own_c_descriptors(self, cls: type) -> None:
        base = c_base(cls)
        names = public_methods(base)
        assert names
        overridden = PY_OVERRIDES.get(cls.__name__, set())
        for name in names:
            own = vars(cls).get(name)
            if name in overridden:
                assert isinstance(getattr(cls, name), types.FunctionType), (cls.__name__, name)
                continue
            assert isinstance(own, types.MethodDescriptorType), (cls.__name__, name)
            assert own.__objclass__ is cls, (cls.__name__, name)
            shared = vars(base)[name]
            assert own.__doc__ == shared.__doc__
            assert own.__text_signature__ == shared.__text_signature__
            assert inspect.signature(own) == inspect.signature(shared)

    def test_membership_is_the_c_slot(self, cls: type) -> None:
        base = c_base(cls)
        if "__contains__" in vars(base):
            assert cls.__contains__ is base.__contains__  # no Python override anywhere

    def test_same_answers_pickling_and_isinstance(self, cls: type) -> None:
        f = make(cls)
        assert isinstance(f, c_base(cls)) and type(f) is cls
        g = pickle.loads(pickle.dumps(f))
        assert type(g) is cls
        if cls is bloomkit.TopK:
            assert g.heavy_hitters() == f.heavy_hitters()
        else:
            assert g == f
        if hasattr(cls, "__contains__"):
            assert all(k in g for k in range(200))
        if hasattr(f, "count"):
            assert f.count(7) == c_base(cls).count(f, 7) >= 1


class OwnMethodsTests:
    def test_user_subclass_gets_its_own_and_overrides_stay(self) -> None:
        class Mine(bloomkit.BloomFilter):  # no __slots__: a __dict__, still fast calls
            def contains_many(self, keys: Any) -> Any:
                return ["mine"]

        assert vars(Mine)["add"].__objclass__ is Mine
        assert Mine.contains_many(Mine(10), [1]) == ["mine"]
        f = Mine(100)
        f.add("x")
        assert "x" in f and f.contains_many(["x"]) == ["mine"]
        assert _core.own_methods(Mine) == 0  # already done: idempotent

    def test_unbound_call_needs_an_instance_of_the_class(self) -> None:
        """The one visible difference: a class's descriptor checks its own class."""
        with pytest.raises(TypeError, match="BloomFilter"):
            bloomkit.BloomFilter.add(bloomkit.BlockedBloomFilter(10), "k")
        g = bloomkit.BlockedBloomFilter(10)
        _core.BloomBase.add(g, "k")  # the C base's own descriptor takes any of them
        assert "k" in g

    def test_bad_arguments(self) -> None:
        with pytest.raises(TypeError, match="class defined in Python"):
            _core.own_methods(_core.BloomBase)
        with pytest.raises(TypeError, match="class defined in Python"):
            _core.own_methods(bloomkit.BloomFilter(10))  # type: ignore[arg-type]

        class NoCBase:
            pass

        assert _core.own_methods(NoCBase) == 0


# ---- what the interpreter does with the call (CPython 3.11+) --------------------------

ADAPTIVE = sys.version_info >= (3, 11) and platform.python_implementation() == "CPython"

# class -> (method, arguments): one per calling convention, from each kind's recipe
HOT: dict[str, tuple[str, str]] = kind_list.cases("hot")[0]



def test_hot_covers_every_kind() -> None:
    """A new kind needs its hot call in its recipe (tests/kind_list.py)."""
    kind_list.assert_covers(HOT)


def _call_loop(method: str, args: str) -> Callable[[Any], None]:
    ns: dict[str, Any] = {}
    member = "        k in f\n" if method != "admit" else ""  # TinyLFU has no `in`
    exec(f"def loop(f):\n    for k in range(1000):\n        f.{method}({args})\n{member}", ns)
    fn: Callable[[Any], None] = ns["loop"]
    return fn


def _specialised_ops(fn: Callable[[Any], None], obj: Any) -> list[str]:
    fn(obj)
    fn(obj)
    return [i.opname for i in dis.get_instructions(fn, adaptive=True)  # type: ignore[call-arg]
            if i.opname.startswith(("LOAD_METHOD", "LOAD_ATTR", "PRECALL", "CALL"))]


@pytest.mark.skipif(not ADAPTIVE, reason="CPython 3.11+ specialising interpreter")
@pytest.mark.parametrize("cls", PUBLIC, ids=lambda c: c.__name__)
def test_calls_specialise_as_on_the_c_base(cls: type) -> None:
    """The same loop, in fresh code objects, run on the C base and on the public class: the
    interpreter must end in the same specialised instructions (before the fix the public
    class stayed at PRECALL_ADAPTIVE, deoptimising on every call)."""
    method, args = HOT[cls.__name__]
    f = make(cls)
    f_base = base_twin(f)
    on_base = _specialised_ops(_call_loop(method, args), f_base)
    on_public = _specialised_ops(_call_loop(method, args), f)
    assert on_public == on_base, (cls.__name__, on_public, on_base)
    assert not any(op.endswith("_ADAPTIVE") and op.startswith(("PRECALL", "LOAD_METHOD"))
                   for op in on_public), on_public


@pytest.mark.skipif(not ADAPTIVE, reason="CPython 3.11+ specialising interpreter")
def test_a_plain_subclass_shows_the_old_cost() -> None:
    """The reference: a subclass that skips own_methods does not specialise (if CPython
    ever lifts the exact-type check, own_methods becomes unnecessary and this says so)."""

    class Plain(_core.BloomBase):  # type: ignore[type-arg]
        __slots__ = ()

    f = bloomkit.BloomFilter(100)
    ops = _specialised_ops(_call_loop("add", "k"), Plain.from_bytes(f.to_bytes()))
    on_base = _specialised_ops(_call_loop("add", "k"), _core.BloomBase.from_bytes(f.to_bytes()))
    assert ops != on_base
