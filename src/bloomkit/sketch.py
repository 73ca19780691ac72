"""Frequency sketches: the count-min sketch and TinyLFU.

:class:`CountMinSketch` and :class:`TinyLFU` are thin facades over the C
types :class:`bloomkit.CountMinBase` (``bk_sketch.c``) and
:class:`bloomkit.TinyLFUBase` (``bk_sketch_tlfu.c``); every per-key and batch
operation is C.  The top-k tracker built on a count-min sketch is
:class:`bloomkit.topk.TopK` (its own module since #30; ``bloomkit.sketch.TopK``
still names it).  See docs/sketch.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, overload

from . import _core
from ._typing import Key
from .persist import Persistent

__all__ = ["CountMinSketch", "TinyLFU"]

_K = TypeVar("_K", contravariant=True)  # the key type (see _typing.py)
_T = TypeVar("_T")  # the caller's objects, mapped to a Key by key=

KIND_COUNT_MIN: int = _core.KINDS["CountMinSketch"].id
KIND_TINYLFU: int = _core.KINDS["TinyLFU"].id


def _check_rate(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a float in (0, 1), not {type(value).__name__}")
    v = float(value)
    if not (0.0 < v < 1.0):
        raise ValueError(f"{name} must be in (0, 1), got {value!r}")
    return v


if TYPE_CHECKING:
    # The C types _core.CountMinBase, _core.TinyLFUBase (py_sketch.c) as mypy sees
    # them: the stub of a structure's C type lives in its facade (_core.pyi keeps the
    # module's functions and the shared bases).
    from collections.abc import Iterable
    from typing import Generic

    from ._core import StateBase

    _SketchSelf = TypeVar("_SketchSelf", bound="_SketchState")

    class _SketchState(StateBase):
        def _key_hash(self, key: object, /) -> int: ...
        @property
        def nbytes(self) -> int: ...

    _CountMinSelf = TypeVar("_CountMinSelf", bound="CountMinBase[Any]")

    class CountMinBase(_SketchState, Generic[_K]):
        def __new__(
            cls: type[_CountMinSelf],
            width: int,
            depth: int,
            *,
            seed: int = 0,
            secret: bytes | None = None,
            key: Any = None,
            conservative: bool = False,
            counter_bits: int = 32,
            row_hash: int = 1,
        ) -> _CountMinSelf: ...
        def add(self, key: _K, count: int = 1, /) -> int: ...
        def estimate(self, key: _K, /) -> int: ...
        def __contains__(self, key: _K, /) -> bool: ...
        def add_many(self, keys: Iterable[_K], counts: Any = None) -> None: ...
        def estimate_many(self, keys: Iterable[_K], /) -> Any: ...
        def merge(
            self: _CountMinSelf, other: CountMinBase[Any], *, saturate: bool = False
        ) -> _CountMinSelf: ...
        def __add__(self: _CountMinSelf, other: CountMinBase[Any], /) -> _CountMinSelf: ...
        def __iadd__(self: _CountMinSelf, other: CountMinBase[Any], /) -> _CountMinSelf: ...
        def clear(self) -> None: ...
        def _counter_positions(self, key: object, /) -> list[int]: ...
        @property
        def width(self) -> int: ...
        @property
        def depth(self) -> int: ...
        @property
        def counter_bits(self) -> int: ...
        @property
        def row_hash(self) -> int: ...
        @property
        def counter_max(self) -> int: ...
        @property
        def conservative(self) -> bool: ...
        @property
        def total(self) -> int: ...

    _TinyLFUSelf = TypeVar("_TinyLFUSelf", bound="TinyLFUBase[Any]")

    class TinyLFUBase(_SketchState, Generic[_K]):
        def __new__(
            cls: type[_TinyLFUSelf],
            capacity: int,
            *,
            sample_factor: int = 10,
            seed: int = 0,
            secret: bytes | None = None,
            key: Any = None,
        ) -> _TinyLFUSelf: ...
        def record(self, key: _K, /) -> None: ...
        def record_many(self, keys: Iterable[_K], /) -> None: ...
        def estimate(self, key: _K, /) -> int: ...
        def admit(self, candidate: _K, victim: _K, /) -> bool: ...
        def age(self) -> None: ...
        def clear(self) -> None: ...
        @property
        def capacity(self) -> int: ...
        @property
        def sample_factor(self) -> int: ...
        @property
        def sample_size(self) -> int: ...
        @property
        def events(self) -> int: ...
        @property
        def resets(self) -> int: ...
        @property
        def num_counters(self) -> int: ...
        @property
        def doorkeeper_bits(self) -> int: ...

else:
    CountMinBase = _core.CountMinBase
    TinyLFUBase = _core.TinyLFUBase


class CountMinSketch(Persistent, CountMinBase[_K]):
    """Count-min sketch (Cormode and Muthukrishnan, 2005).

    ``CountMinSketch(width, depth, *, seed=0, key=None, secret=None,
    conservative=False, counter_bits=32, row_hash=1)``: ``depth`` rows of
    ``width`` saturating counters.  Each row's column is an independent mix
    of the key hash (``row_hash=1``); ``row_hash=0`` is the double hashing of
    sketches written before, kept so that they load, answer and can be
    rebuilt as before (its rows are correlated: docs/sketch.md).
    ``estimate(key)`` is never below the true count (until a counter
    saturates); with ``width = ceil(e/eps)`` and ``depth = ceil(ln 1/delta)``
    it exceeds the truth by more than ``eps * total`` with probability at
    most ``delta`` (:meth:`from_error`).  ``a + b`` / ``a.merge(b)`` add
    counters of sketches of the same shape, seed, counter width, row hashing
    and hashing; a merge that would overflow a counter raises OverflowError
    and leaves the sketch unchanged unless ``saturate=True``.
    """

    __slots__ = ()
    _bk_kind = KIND_COUNT_MIN

    @overload
    def __new__(
        cls, width: int, depth: int, *, seed: int = 0, key: None = None,
        secret: bytes | None = None, conservative: bool = False, counter_bits: int = 32,
        row_hash: int = 1,
    ) -> CountMinSketch[Key]: ...
    @overload
    def __new__(
        cls, width: int, depth: int, *, seed: int = 0, key: Callable[[_T], Key],
        secret: bytes | None = None, conservative: bool = False, counter_bits: int = 32,
        row_hash: int = 1,
    ) -> CountMinSketch[_T]: ...
    def __new__(
        cls,
        width: int,
        depth: int,
        *,
        seed: int = 0,
        key: Callable[[Any], Key] | None = None,
        secret: bytes | None = None,
        conservative: bool = False,
        counter_bits: int = 32,
        row_hash: int = 1,
    ) -> CountMinSketch[Any]:
        for name, v in (("width", width), ("depth", depth), ("counter_bits", counter_bits),
                        ("row_hash", row_hash)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"{name} must be an int, not {type(v).__name__}")
        return super().__new__(
            cls, width, depth, seed=seed, secret=secret, key=key,
            conservative=bool(conservative), counter_bits=counter_bits, row_hash=row_hash,
        )

    @overload
    @classmethod
    def from_error(
        cls, epsilon: float, delta: float, *, seed: int = 0, key: None = None,
        secret: bytes | None = None, conservative: bool = False, counter_bits: int = 32,
        row_hash: int = 1,
    ) -> CountMinSketch[Key]: ...
    @overload
    @classmethod
    def from_error(
        cls, epsilon: float, delta: float, *, seed: int = 0, key: Callable[[_T], Key],
        secret: bytes | None = None, conservative: bool = False, counter_bits: int = 32,
        row_hash: int = 1,
    ) -> CountMinSketch[_T]: ...
    @classmethod
    def from_error(
        cls,
        epsilon: float,
        delta: float,
        *,
        seed: int = 0,
        key: Callable[[Any], Key] | None = None,
        secret: bytes | None = None,
        conservative: bool = False,
        counter_bits: int = 32,
        row_hash: int = 1,
    ) -> CountMinSketch[Any]:
        """A sketch with error at most ``epsilon * total`` with probability ``1 - delta``.

        width = ceil(e / epsilon), depth = ceil(ln(1 / delta)).
        """
        eps = _check_rate("epsilon", epsilon)
        dlt = _check_rate("delta", delta)
        width = math.ceil(math.e / eps)
        depth = max(1, math.ceil(math.log(1.0 / dlt)))
        if width > 2**32:
            raise ValueError("epsilon too small: width would exceed 2**32")
        if depth > 64:
            raise ValueError("delta too small: depth would exceed 64")
        sketch: CountMinSketch[Any] = cls(
            width, depth, seed=seed, key=key, secret=secret, conservative=conservative,
            counter_bits=counter_bits, row_hash=row_hash,
        )
        return sketch

    @property
    def epsilon(self) -> float:
        """The additive error factor this width guarantees: e / width."""
        return math.e / self.width

    @property
    def delta(self) -> float:
        """The failure probability this depth guarantees: e ** -depth."""
        return math.exp(-self.depth)

    def __repr__(self) -> str:
        extra = ", conservative=True" if self.conservative else ""
        extra += ", row_hash=0" if self.row_hash == 0 else ""
        extra += ", keyed" if self.keyed else ""
        extra += ", mapped" if self.mapped else ""
        return (
            f"CountMinSketch(width={self.width}, depth={self.depth}, seed={self.seed}, "
            f"counter_bits={self.counter_bits}, total={self.total}{extra})"
        )


class TinyLFU(Persistent, TinyLFUBase[_K]):
    """TinyLFU frequency sketch (Einziger, Friedman and Manes, 2017).

    ``TinyLFU(capacity, *, sample_factor=10, seed=0, key=None, secret=None)``:
    4-bit counters (a key's four in one 64-byte line) behind a doorkeeper
    Bloom filter; every ``sample_factor * capacity`` recorded events all
    counters are halved and the doorkeeper cleared.  ``record(key)`` on every
    access; ``admit(candidate, victim)`` is True when the candidate is
    estimated more frequent.
    """

    __slots__ = ()
    _bk_kind = KIND_TINYLFU

    @overload
    def __new__(
        cls, capacity: int, *, sample_factor: int = 10, seed: int = 0, key: None = None,
        secret: bytes | None = None,
    ) -> TinyLFU[Key]: ...
    @overload
    def __new__(
        cls, capacity: int, *, sample_factor: int = 10, seed: int = 0, key: Callable[[_T], Key],
        secret: bytes | None = None,
    ) -> TinyLFU[_T]: ...
    def __new__(
        cls,
        capacity: int,
        *,
        sample_factor: int = 10,
        seed: int = 0,
        key: Callable[[Any], Key] | None = None,
        secret: bytes | None = None,
    ) -> TinyLFU[Any]:
        return super().__new__(
            cls, capacity, sample_factor=sample_factor, seed=seed, secret=secret, key=key
        )

    def __repr__(self) -> str:
        extra = ", keyed" if self.keyed else ""
        extra += ", mapped" if self.mapped else ""
        return (
            f"TinyLFU(capacity={self.capacity}, sample_factor={self.sample_factor}, "
            f"seed={self.seed}, events={self.events}, resets={self.resets}{extra})"
        )


def __getattr__(name: str) -> Any:
    """``bloomkit.sketch.TopK`` and the unpickler of TopK pickles written before
    #30 (they name ``bloomkit.sketch.TopK`` and ``bloomkit.sketch._restore_topk``):
    both live in bloomkit.topk now, which imports this module, hence the lazy look."""
    if name in ("TopK", "_restore_topk"):
        from . import topk

        return topk.TopK if name == "TopK" else topk.restore_topk
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
