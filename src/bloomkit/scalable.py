"""The scalable Bloom filter: a chain of Bloom filters that grows with n.

A thin facade over the C type :class:`bloomkit.ScalableBase` (Almeida,
Baquero, Preguica and Hutchison, 2007).  Link i holds
``initial_capacity * growth**i`` keys at error rate
``error_rate * (1 - tightening) * tightening**i``, so the compound rate stays
below ``error_rate`` however many keys are added.  This module sizes each
link (:func:`bloomkit.design`); the C type hashes a key once and probes every
link, and stores the whole chain in ONE container of the format.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, overload

from . import _core, _descriptor
from ._setops import MergeSetOps
from ._typing import Key
from .bloom import layout_id
from .design import (
    LAYOUTS,
    MIN_BLOCKED_ERROR_RATE,
    MIN_ERROR_RATE,
    design,
    validate_capacity,
    validate_error_rate,
    validate_layout_version,
)
from .errors import CapacityError
from .persist import Persistent

__all__ = ["KIND_SCALABLE_BLOOM", "MAX_GROWTH", "MAX_LINKS", "LinkInfo", "ScalableBloomFilter"]

_K = TypeVar("_K", contravariant=True)  # the key type (see _typing.py)
_T = TypeVar("_T")  # the caller's objects, mapped to a Key by key=

KIND_SCALABLE_BLOOM: int = _core.KINDS["ScalableBloomFilter"].id
MAX_LINKS = 64
MAX_GROWTH = 16
_KIND = _core.KINDS["ScalableBloomFilter"]
_MAX_CAPACITY: int = _KIND.capacity_max or 0


if TYPE_CHECKING:
    # The C type _core.ScalableBase (py_scalable.c) as mypy sees it: the stub of a
    # structure's C type lives in its facade (_core.pyi keeps the module's functions and
    # the shared bases).
    from ._core import Membership

    _ScalableSelf = TypeVar("_ScalableSelf", bound="ScalableBase[Any]")

    class ScalableBase(Membership[_K]):
        def __new__(
            cls: type[_ScalableSelf],
            error_rate: float,
            tightening: float,
            initial_capacity: int,
            growth: int,
            layout: int,
            num_bits: int,
            num_hashes: int,
            link_error_rate: float,
            *,
            seed: int = 0,
            secret: bytes | None = None,
            key: Any = None,
        ) -> _ScalableSelf: ...
        def union(self: _ScalableSelf, *others: ScalableBase[Any]) -> _ScalableSelf: ...
        def __or__(self: _ScalableSelf, other: ScalableBase[Any], /) -> _ScalableSelf: ...
        def __ior__(self: _ScalableSelf, other: ScalableBase[Any], /) -> _ScalableSelf: ...
        def clear(self) -> None: ...
        def estimate_count(self) -> float: ...
        def estimate_error_rate(self) -> float: ...
        def _links(self) -> list[tuple[int, float, int, int, int, int, int]]: ...
        def _key_hash(self, key: object, /) -> int: ...
        @property
        def error_rate(self) -> float: ...
        @property
        def tightening(self) -> float: ...
        @property
        def initial_capacity(self) -> int: ...
        @property
        def growth(self) -> int: ...
        @property
        def layout(self) -> str: ...
        @property
        def layout_version(self) -> int: ...
        @property
        def num_links(self) -> int: ...
        @property
        def capacity(self) -> int: ...
        @property
        def num_bits(self) -> int: ...
        @property
        def nbytes(self) -> int: ...

else:
    ScalableBase = _core.ScalableBase


class LinkInfo(NamedTuple):
    """One link of a chain, as reported by :attr:`ScalableBloomFilter.links`."""

    capacity: int
    error_rate: float
    num_bits: int
    num_hashes: int
    num_keys: int
    bits_set: int
    nbytes: int

    @property
    def fill_ratio(self) -> float:
        return self.bits_set / self.num_bits


def _check_growth(growth: object) -> int:
    if isinstance(growth, bool) or not isinstance(growth, int):
        raise TypeError(f"growth must be an int in [2, {MAX_GROWTH}], not {type(growth).__name__}")
    if not 2 <= growth <= MAX_GROWTH:
        raise ValueError(f"growth must be an int in [2, {MAX_GROWTH}], got {growth}")
    return growth


def _check_tightening(tightening: object) -> float:
    allowed = "tightening must be a real number with 0 < tightening < 1"
    if isinstance(tightening, (bool, str, bytes)) or not isinstance(tightening, (int, float)):
        raise TypeError(f"{allowed}, not {type(tightening).__name__}")
    value = float(tightening)
    if not 0.0 < value < 1.0:  # also refuses NaN
        raise ValueError(f"{allowed}, got {value!r}")
    return value


def _link_params(
    index: int, initial_capacity: int, error_rate: float, growth: int, tightening: float,
    layout: str, layout_version: int,
) -> tuple[int, int, int, float]:
    """(num_bits, num_hashes, capacity, error_rate) of link ``index``."""
    if index >= MAX_LINKS:
        raise CapacityError(f"scalable chain is full: at most {MAX_LINKS} links")
    capacity = initial_capacity * growth**index
    if capacity > _MAX_CAPACITY:
        raise CapacityError(
            f"scalable chain is full: link {index} would need capacity {capacity} > "
            f"{_descriptor.power_text(_MAX_CAPACITY)}"
        )
    rate = error_rate * (1.0 - tightening) * math.pow(tightening, index)
    floor = MIN_BLOCKED_ERROR_RATE if layout == "blocked" else MIN_ERROR_RATE
    if rate < floor:
        raise CapacityError(
            f"scalable chain is full: link {index} would need error rate {rate:.3g}, below the "
            f"{layout} layout's floor {floor:g}; use a larger initial_capacity or growth, a "
            "tightening closer to 1" + (", or layout='classic'" if layout == "blocked" else "")
        )
    try:
        d = design(capacity, rate, layout, layout_version=layout_version)
    except ValueError as exc:
        raise CapacityError(f"scalable chain is full: link {index}: {exc}") from exc
    return d.num_bits, d.num_hashes, capacity, rate


class ScalableBloomFilter(MergeSetOps, Persistent, ScalableBase[_K]):
    """A Bloom filter that grows: a chain of classic or blocked Bloom filters.

    ``ScalableBloomFilter(initial_capacity=1000, error_rate=0.01, *, growth=2,
    tightening=0.5, layout="classic", seed=0, key=None, secret=None)``.
    ``add`` puts a key in the newest link unless some link already reports it
    (then it returns False and adds nothing); when the newest link has taken
    its capacity a new link with ``growth`` times the capacity and
    ``tightening`` times the error rate is appended.  The compound
    false-positive rate stays below ``error_rate`` for any number of keys.
    ``layout_version`` is the blocked links' (see :class:`BlockedBloomFilter`;
    a chain keeps its version as it grows).
    """

    __slots__ = ()
    _set_reason = (
        'its links have different shapes, so no bit-wise comparison, '
        'intersection or difference of two chains is defined (their union '
        'appends links)'
    )
    _bk_kind = KIND_SCALABLE_BLOOM

    @overload
    def __new__(
        cls, initial_capacity: int = 1000, error_rate: float = 0.01, *, growth: int = 2,
        tightening: float = 0.5, layout: str = "classic", seed: int = 0, key: None = None,
        secret: bytes | None = None, layout_version: int | None = None,
    ) -> ScalableBloomFilter[Key]: ...
    @overload
    def __new__(
        cls, initial_capacity: int = 1000, error_rate: float = 0.01, *, growth: int = 2,
        tightening: float = 0.5, layout: str = "classic", seed: int = 0, key: Callable[[_T], Key],
        secret: bytes | None = None, layout_version: int | None = None,
    ) -> ScalableBloomFilter[_T]: ...
    def __new__(
        cls,
        initial_capacity: int = 1000,
        error_rate: float = 0.01,
        *,
        growth: int = 2,
        tightening: float = 0.5,
        layout: str = "classic",
        seed: int = 0,
        key: Callable[[Any], Key] | None = None,
        secret: bytes | None = None,
        layout_version: int | None = None,
    ) -> ScalableBloomFilter[Any]:
        n0 = validate_capacity(initial_capacity)
        p = validate_error_rate(error_rate)
        s = _check_growth(growth)
        r = _check_tightening(tightening)
        if not isinstance(layout, str):
            raise TypeError(f"layout must be one of {LAYOUTS!r}, not {type(layout).__name__}")
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS!r}, got {layout!r}")
        layout_version = validate_layout_version(layout, layout_version)
        try:
            num_bits, k, _, rate = _link_params(0, n0, p, s, r, layout, layout_version)
        except CapacityError as exc:
            raise ValueError(str(exc).replace("scalable chain is full: ", "")) from exc
        return super().__new__(
            cls, p, r, n0, s, layout_id(layout, layout_version), num_bits, k, rate,
            seed=seed, secret=secret, key=key,
        )

    def _link_shape(self, index: int) -> tuple[int, int, int, float]:
        """Called by the C type when the chain grows."""
        return _link_params(
            index, self.initial_capacity, self.error_rate, self.growth, self.tightening,
            self.layout, self.layout_version,
        )

    @property
    def links(self) -> list[LinkInfo]:
        """Per-link information, oldest link first (``len(f.links) == f.num_links``)."""
        return [LinkInfo(*t) for t in self._links()]

    def __repr__(self) -> str:
        extra = ", keyed" if self.keyed else ""
        if self.layout == "blocked" and self.layout_version != 1:
            extra += f", layout_version={self.layout_version}"
        mapped = ", mapped" if self.mapped else ""
        return (
            f"{type(self).__name__}(initial_capacity={self.initial_capacity}, "
            f"error_rate={self.error_rate:g}, growth={self.growth}, "
            f"tightening={self.tightening:g}, layout={self.layout!r}, seed={self.seed}, "
            f"num_links={self.num_links}, count={len(self)}{extra}{mapped})"
        )
