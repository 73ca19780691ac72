"""The classic and the cache-blocked Bloom filter.

Thin facades over the C type :class:`bloomkit.BloomBase`: sizing from
``(capacity, error_rate)`` happens here (see :mod:`bloomkit.design`); every
per-key and batch operation is C.  ``__slots__ = ()`` keeps the instances as
small as the C type, ``key in f`` goes straight to the C ``sq_contains``
slot, and ``f.add(key)`` is as fast as on the C type because each class gets
its own descriptors of the C methods (``Persistent.__init_subclass__``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, overload

from . import _core
from ._setops import BloomSetOps
from ._typing import Key
from .design import BLOCK_BITS, design, false_positive_rate, validate_layout_version
from .persist import Persistent

__all__ = ["BlockedBloomFilter", "BloomFilter"]

KIND_BLOOM: int = _core.KINDS["BloomFilter"].id
KIND_BLOCKED_BLOOM: int = _core.KINDS["BlockedBloomFilter"].id

_K = TypeVar("_K", contravariant=True)  # the key type (see _typing.py)
_T = TypeVar("_T")  # the caller's objects, mapped to a Key by key=


def layout_id(layout: str, layout_version: int) -> int:
    """The C core's layout argument (BK_BLOOM_LAYOUT_*): 0 classic, 1 + the
    layout version for blocked."""
    return 0 if layout == "classic" else 1 + layout_version


def _nominal(num_bits: int, num_hashes: int) -> tuple[int, float]:
    """Capacity at which num_hashes is optimal for num_bits, and its rate."""
    capacity = max(1, math.floor(num_bits * math.log(2) / num_hashes))
    rate = false_positive_rate(num_bits, num_hashes, capacity)
    return capacity, min(max(rate, 5e-324), 1.0 - 2**-53)


def _check_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    return value


if TYPE_CHECKING:
    # The C type _core.BloomBase (py_bloom.c) as mypy sees it: the stub of a
    # structure's C type lives in its facade (_core.pyi keeps the module's functions and
    # the shared bases).
    from ._core import Updatable

    _BloomSelf = TypeVar("_BloomSelf", bound="BloomBase[Any]")

    class BloomBase(Updatable[_K]):
        def __new__(
            cls: type[_BloomSelf],
            layout: int,
            num_bits: int,
            num_hashes: int,
            capacity: int,
            error_rate: float,
            *,
            seed: int = 0,
            secret: bytes | None = None,
            key: Any = None,
        ) -> _BloomSelf: ...
        def union(self: _BloomSelf, *others: BloomBase[Any]) -> _BloomSelf: ...
        def intersection(self: _BloomSelf, *others: BloomBase[Any]) -> _BloomSelf: ...
        def __or__(self: _BloomSelf, other: BloomBase[Any], /) -> _BloomSelf: ...
        def __and__(self: _BloomSelf, other: BloomBase[Any], /) -> _BloomSelf: ...
        def __ior__(self: _BloomSelf, other: BloomBase[Any], /) -> _BloomSelf: ...
        def __iand__(self: _BloomSelf, other: BloomBase[Any], /) -> _BloomSelf: ...
        def clear(self) -> None: ...
        @classmethod
        def _header(
            cls,
            layout: int,
            num_bits: int,
            num_hashes: int,
            capacity: int,
            error_rate: float,
            *,
            seed: int = 0,
            secret: bytes | None = None,
        ) -> bytes: ...
        def estimate_count(self) -> float: ...
        def estimate_error_rate(self) -> float: ...
        def _bit_positions(self, key: object, /) -> list[int]: ...
        def _key_hash(self, key: object, /) -> int: ...
        def _recount(self) -> None: ...
        @property
        def num_bits(self) -> int: ...
        @property
        def num_hashes(self) -> int: ...
        @property
        def num_blocks(self) -> int: ...
        @property
        def capacity(self) -> int: ...
        @property
        def error_rate(self) -> float: ...
        @property
        def nbytes(self) -> int: ...
        @property
        def bits_set(self) -> int: ...
        @property
        def fill_ratio(self) -> float: ...
        @property
        def layout(self) -> str: ...
        @property
        def layout_version(self) -> int: ...

else:
    BloomBase = _core.BloomBase


class _BloomFacade(BloomSetOps, Persistent, BloomBase[_K]):
    __slots__ = ()
    _bk_kind: int
    _layout_name: str

    @classmethod
    def _designed(
        cls, capacity: int, error_rate: float, seed: int, key: Any, secret: bytes | None,
        layout_version: int | None,
    ) -> Any:
        """A new filter sized by :func:`design` (each class's ``__new__`` calls
        this, so that a wrong call names the class: ``BloomFilter.__new__()``)."""
        d = design(capacity, error_rate, cls._layout_name, layout_version=layout_version)
        return BloomBase.__new__(
            cls, layout_id(d.layout, d.layout_version), d.num_bits, d.num_hashes, d.capacity,
            d.error_rate, seed=seed, secret=secret, key=key,
        )

    def __repr__(self) -> str:
        extra = ", keyed" if self.keyed else ""
        if self.layout == "blocked" and self.layout_version != 1:
            extra += f", layout_version={self.layout_version}"
        mapped = ", mapped" if self.mapped else ""
        return (
            f"{type(self).__name__}(capacity={self.capacity}, error_rate={self.error_rate:g}, "
            f"num_bits={self.num_bits}, num_hashes={self.num_hashes}, seed={self.seed}, "
            f"count={len(self)}, fill_ratio={self.fill_ratio:.4f}{extra}{mapped})"
        )

    @classmethod
    def _create_header(
        cls, capacity: int, error_rate: float = 0.01, *, seed: int = 0,
        secret: bytes | None = None, layout_version: int | None = None,
    ) -> bytes:
        """The header of a fresh filter sized like ``cls(capacity, error_rate)``
        (for :func:`bloomkit.create`: the payload is never allocated)."""
        d = design(capacity, error_rate, cls._layout_name, layout_version=layout_version)
        return BloomBase._header(
            layout_id(d.layout, d.layout_version), d.num_bits, d.num_hashes, d.capacity,
            d.error_rate, seed=seed, secret=secret,
        )


class BloomFilter(_BloomFacade[_K]):
    """The classic Bloom filter: m bits, k probes spread over all of them.

    ``BloomFilter(capacity, error_rate=0.01, *, seed=0, key=None, secret=None)``
    sizes the filter with m = ceil(-n ln p / (ln 2)^2) and
    k = round(m/n ln 2).  Keys are str (UTF-8), bytes-like or int (see
    docs/keys.md); ``key=`` maps other objects to one of these; ``secret=``
    (16 bytes) switches to SipHash-2-4 for keys chosen by an adversary.
    """

    __slots__ = ()
    _bk_kind = KIND_BLOOM
    _layout_name = "classic"

    @overload
    def __new__(
        cls, capacity: int, error_rate: float = 0.01, *, seed: int = 0, key: None = None,
        secret: bytes | None = None, layout_version: int | None = None,
    ) -> BloomFilter[Key]: ...
    @overload
    def __new__(
        cls, capacity: int, error_rate: float = 0.01, *, seed: int = 0,
        key: Callable[[_T], Key], secret: bytes | None = None, layout_version: int | None = None,
    ) -> BloomFilter[_T]: ...
    def __new__(
        cls,
        capacity: int,
        error_rate: float = 0.01,
        *,
        seed: int = 0,
        key: Callable[[Any], Key] | None = None,
        secret: bytes | None = None,
        layout_version: int | None = None,
    ) -> BloomFilter[Any]:
        obj: BloomFilter[Any] = cls._designed(
            capacity, error_rate, seed, key, secret, layout_version
        )
        return obj

    @overload
    @classmethod
    def with_size(
        cls, num_bits: int, num_hashes: int, *, seed: int = 0, key: None = None,
        secret: bytes | None = None,
    ) -> BloomFilter[Key]: ...
    @overload
    @classmethod
    def with_size(
        cls, num_bits: int, num_hashes: int, *, seed: int = 0, key: Callable[[_T], Key],
        secret: bytes | None = None,
    ) -> BloomFilter[_T]: ...
    @classmethod
    def with_size(
        cls,
        num_bits: int,
        num_hashes: int,
        *,
        seed: int = 0,
        key: Callable[[Any], Key] | None = None,
        secret: bytes | None = None,
    ) -> BloomFilter[Any]:
        """A filter of exactly ``num_bits`` bits and ``num_hashes`` probes."""
        num_bits = _check_int("num_bits", num_bits)
        num_hashes = _check_int("num_hashes", num_hashes)
        if not 1 <= num_bits <= 2**46:
            raise ValueError("num_bits must be in [1, 2**46]")
        if not 1 <= num_hashes <= 64:
            raise ValueError("num_hashes must be in [1, 64]")
        capacity, rate = _nominal(num_bits, num_hashes)
        obj: BloomFilter[Any] = BloomBase.__new__(
            cls, 0, num_bits, num_hashes, capacity, rate, seed=seed, secret=secret, key=key
        )
        return obj


class BlockedBloomFilter(_BloomFacade[_K]):
    """The cache-blocked Bloom filter: every probe of a key in one 64-byte line.

    Same API as :class:`BloomFilter`, plus ``layout_version``: 1 (the
    default) derives a key's in-block positions from independent bits of its
    hash and sizes the filter with the exact occupancy model, so the
    measured rate at capacity meets ``error_rate`` (9.92 bits per key at 1%,
    15.55 at 0.1%); 0 is the layout of the files written before version 1
    existed (positions from 32 bits of the hash, sized by the Poisson fill
    model: 1-4% over ``error_rate`` at 1e-2..1e-4), for building filters that
    must match them.  One cache miss per query instead of k.
    """

    __slots__ = ()
    _bk_kind = KIND_BLOCKED_BLOOM
    _layout_name = "blocked"

    @overload
    def __new__(
        cls, capacity: int, error_rate: float = 0.01, *, seed: int = 0, key: None = None,
        secret: bytes | None = None, layout_version: int | None = None,
    ) -> BlockedBloomFilter[Key]: ...
    @overload
    def __new__(
        cls, capacity: int, error_rate: float = 0.01, *, seed: int = 0,
        key: Callable[[_T], Key], secret: bytes | None = None, layout_version: int | None = None,
    ) -> BlockedBloomFilter[_T]: ...
    def __new__(
        cls,
        capacity: int,
        error_rate: float = 0.01,
        *,
        seed: int = 0,
        key: Callable[[Any], Key] | None = None,
        secret: bytes | None = None,
        layout_version: int | None = None,
    ) -> BlockedBloomFilter[Any]:
        obj: BlockedBloomFilter[Any] = cls._designed(
            capacity, error_rate, seed, key, secret, layout_version
        )
        return obj

    @overload
    @classmethod
    def with_size(
        cls, num_bits: int, num_hashes: int, *, seed: int = 0, key: None = None,
        secret: bytes | None = None, layout_version: int | None = None,
    ) -> BlockedBloomFilter[Key]: ...
    @overload
    @classmethod
    def with_size(
        cls, num_bits: int, num_hashes: int, *, seed: int = 0, key: Callable[[_T], Key],
        secret: bytes | None = None, layout_version: int | None = None,
    ) -> BlockedBloomFilter[_T]: ...
    @classmethod
    def with_size(
        cls,
        num_bits: int,
        num_hashes: int,
        *,
        seed: int = 0,
        key: Callable[[Any], Key] | None = None,
        secret: bytes | None = None,
        layout_version: int | None = None,
    ) -> BlockedBloomFilter[Any]:
        """A filter of ``num_bits`` (rounded up to a multiple of 512) and ``num_hashes``."""
        num_bits = _check_int("num_bits", num_bits)
        num_hashes = _check_int("num_hashes", num_hashes)
        layout_version = validate_layout_version("blocked", layout_version)
        if not 1 <= num_bits <= 2**46:
            raise ValueError("num_bits must be in [1, 2**46]")
        if not 1 <= num_hashes <= 24:
            raise ValueError("num_hashes must be in [1, 24] for the blocked layout")
        num_bits = -(-num_bits // BLOCK_BITS) * BLOCK_BITS
        capacity, rate = _nominal(num_bits, num_hashes)
        obj: BlockedBloomFilter[Any] = BloomBase.__new__(
            cls, layout_id("blocked", layout_version), num_bits, num_hashes, capacity, rate,
            seed=seed, secret=secret, key=key,
        )
        return obj
