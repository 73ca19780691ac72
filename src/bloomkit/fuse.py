"""The binary fuse filter (Graf and Lemire, 2022): a static set, built once, shipped small.

A thin facade over the C type :class:`bloomkit.BinaryFuseBase`: the
fingerprint width is chosen here; hashing, construction (peeling, GIL
released) and every lookup are C.  See docs/fuse.md and the essay in
``_native/bk_fuse.c``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar, overload

from . import _core
from ._batch import check_keys
from ._domains import domain_mask
from ._typing import Key
from .persist import Persistent

_K = TypeVar("_K", contravariant=True)  # the key type (see _typing.py)
_T = TypeVar("_T")  # the caller's objects, mapped to a Key by key=

__all__ = ["FINGERPRINT_BITS", "KIND_BINARY_FUSE", "BinaryFuseFilter", "fingerprint_bits_for"]

KIND_BINARY_FUSE: int = _core.KINDS["BinaryFuseFilter"].id

FINGERPRINT_BITS = (8, 16, 32)
"""The fingerprint widths: false-positive rates 2**-8, 2**-16, 2**-32."""

_STATIC = (
    "BinaryFuseFilter is static: it is built once from all its keys and cannot {op}; "
    "build a new one from the old keys plus the new, or use a structure that grows "
    "(BloomFilter, BlockedBloomFilter, ScalableBloomFilter, CuckooFilter, QuotientFilter)"
)


def fingerprint_bits_for(error_rate: float) -> int:
    """The smallest width in (8, 16, 32) whose rate 2**-f is at most ``error_rate``."""
    if isinstance(error_rate, bool) or not isinstance(error_rate, (int, float)):
        raise TypeError(f"error_rate must be a float, not {type(error_rate).__name__}")
    p = float(error_rate)
    if not (2.0**-32 <= p < 1.0):
        raise ValueError(
            f"error_rate must be in [2**-32, 1) (fingerprints are 8, 16 or 32 bits), got {p!r}"
        )
    for f in FINGERPRINT_BITS:
        if 2.0**-f <= p:
            return f
    return 32  # unreachable: p >= 2**-32


if TYPE_CHECKING:
    # The C type _core.BinaryFuseBase (py_fuse.c) as mypy sees it: the stub of a
    # structure's C type lives in its facade (_core.pyi keeps the module's functions and
    # the shared bases).
    from ._core import Queryable

    _FuseSelf = TypeVar("_FuseSelf", bound="BinaryFuseBase[Any]")

    class BinaryFuseBase(Queryable[_K]):
        def __new__(
            cls: type[_FuseSelf],
            keys: Iterable[object] | Any,
            fingerprint_bits: int = 8,
            *,
            seed: int = 0,
            secret: bytes | None = None,
            key: Any = None,
        ) -> _FuseSelf: ...
        @classmethod
        def _from_hashes(
            cls: type[_FuseSelf],
            hashes: Any,
            fingerprint_bits: int = 8,
            *,
            seed: int = 0,
            secret: bytes | None = None,
            key: Any = None,
            reuse: bool = False,
            key_domains: int = -1,  # -1 unknown, else a mask of 1 (int) and 2 (text)
        ) -> _FuseSelf: ...
        @classmethod
        def _hash_keys(
            cls,
            keys: Iterable[object] | Any,
            *,
            seed: int = 0,
            secret: bytes | None = None,
            key: Any = None,
            domains: bool = False,
        ) -> Any: ...  # the hashes (bytes); domains=True: (hashes, a mask: 1 int, 2 text)
        def _key_hash(self, key: object, /) -> int: ...
        @property
        def fingerprint_bits(self) -> int: ...
        @property
        def arity(self) -> int: ...
        @property
        def segment_length(self) -> int: ...
        @property
        def segment_count(self) -> int: ...
        @property
        def array_length(self) -> int: ...
        @property
        def fuse_seed(self) -> int: ...
        @property
        def attempts(self) -> int: ...
        @property
        def nbytes(self) -> int: ...
        @property
        def error_rate(self) -> float: ...

else:
    BinaryFuseBase = _core.BinaryFuseBase


class BinaryFuseFilter(Persistent, BinaryFuseBase[_K]):
    """Approximate membership for a static set: ~1.075-1.125 f bits a key, rate 2**-f.

    ``BinaryFuseFilter(keys, *, fingerprint_bits=8, error_rate=None, seed=0,
    key=None, secret=None)`` builds the filter from every key at once (any
    iterable of keys, or a numpy array: the array is hashed without the
    GIL).  Duplicate keys are allowed; ``len(f)`` is the number of distinct
    keys.  ``fingerprint_bits`` is 8, 16 or 32 (false-positive rate 2**-f);
    ``error_rate=`` instead picks the smallest width that meets it.  Lookups
    read 3 slots (4 below 2**17 keys, where the table is cache-sized and the
    4-wise table is ~5% smaller); there is no false negative.

    The filter is immutable: ``add`` raises TypeError.  Building needs all
    key hashes in memory: 8 bytes a key, plus ~14.6 bytes a key of working
    arrays while it peels.
    """

    __slots__ = ()
    _bk_kind = KIND_BINARY_FUSE

    @overload
    def __new__(
        cls, keys: Iterable[Key], *, fingerprint_bits: int | None = None,
        error_rate: float | None = None, seed: int = 0, key: None = None,
        secret: bytes | None = None,
    ) -> BinaryFuseFilter[Key]: ...
    @overload
    def __new__(
        cls, keys: Iterable[_T], *, fingerprint_bits: int | None = None,
        error_rate: float | None = None, seed: int = 0, key: Callable[[_T], Key],
        secret: bytes | None = None,
    ) -> BinaryFuseFilter[_T]: ...
    def __new__(
        cls,
        keys: Iterable[Any],
        *,
        fingerprint_bits: int | None = None,
        error_rate: float | None = None,
        seed: int = 0,
        key: Callable[[Any], Key] | None = None,
        secret: bytes | None = None,
    ) -> BinaryFuseFilter[Any]:
        f = _choose_bits(fingerprint_bits, error_rate)
        check_keys(keys, one="BinaryFuseFilter([key])")
        return super().__new__(cls, keys, f, seed=seed, secret=secret, key=key)

    @overload
    @classmethod
    def from_hashes(
        cls, hashes: Any, *, fingerprint_bits: int | None = None,
        error_rate: float | None = None, seed: int = 0, key: None = None,
        secret: bytes | None = None, reuse: bool = False,
        key_types: Iterable[str] | None = None,
    ) -> BinaryFuseFilter[Key]: ...
    @overload
    @classmethod
    def from_hashes(
        cls, hashes: Any, *, fingerprint_bits: int | None = None,
        error_rate: float | None = None, seed: int = 0, key: Callable[[_T], Key],
        secret: bytes | None = None, reuse: bool = False,
        key_types: Iterable[str] | None = None,
    ) -> BinaryFuseFilter[_T]: ...
    @classmethod
    def from_hashes(
        cls,
        hashes: Any,
        *,
        fingerprint_bits: int | None = None,
        error_rate: float | None = None,
        seed: int = 0,
        key: Callable[[Any], Key] | None = None,
        secret: bytes | None = None,
        reuse: bool = False,
        key_types: Iterable[str] | None = None,
    ) -> BinaryFuseFilter[Any]:
        """Build from a uint64 array of key hashes made with the same ``seed``/``secret``.

        The hashes are :func:`bloomkit.key_hash` values (what
        :mod:`bloomkit.dask` ships instead of the keys; :meth:`hash_keys`
        computes them in batches); the filter equals one built from the keys
        themselves, whatever their order and repeats.  ``reuse=True`` lets
        the build reorder and deduplicate a writable array in place instead
        of copying it (8 bytes a key less at the peak).  Hashes do not say
        what type their keys were: ``key_types`` (``{"int"}``, ``{"text"}``
        or both: the :attr:`key_types` of the keys hashed) records it, and
        without it the filter's ``key_types`` is None (unknown; see
        docs/keys.md, "Key domains").
        """
        f = _choose_bits(fingerprint_bits, error_rate)
        return cls._from_hashes(hashes, f, seed=seed, secret=secret, key=key, reuse=reuse,
                                key_domains=domain_mask(key_types))

    @classmethod
    def hash_keys(
        cls, keys: Iterable[Any], *, seed: int = 0, key: Callable[[Any], Key] | None = None,
        secret: bytes | None = None,
    ) -> Any:
        """The 64-bit key hashes of ``keys`` (a numpy uint64 array, or an
        ``array.array('Q')`` without numpy), as a filter with these options
        hashes them; numpy input is hashed without the GIL."""
        raw = cls._hash_keys(keys, seed=seed, secret=secret, key=key)
        try:
            import numpy as np
        except ImportError:  # pragma: no cover - numpy is optional
            from array import array

            out = array("Q")
            out.frombytes(raw)
            return out
        return np.frombuffer(raw, dtype=np.uint64).copy()

    def add(self, key: object) -> NoReturn:
        """Not supported: the filter is static (TypeError)."""
        raise TypeError(_STATIC.format(op="add keys"))

    def add_many(self, keys: object) -> NoReturn:
        """Not supported: the filter is static (TypeError)."""
        raise TypeError(_STATIC.format(op="add keys"))

    def update(self, *iterables: object) -> NoReturn:
        """Not supported: the filter is static (TypeError)."""
        raise TypeError(_STATIC.format(op="add keys"))

    def union(self, *others: object) -> NoReturn:
        """Not supported: a static filter has no union (TypeError)."""
        raise TypeError(_STATIC.format(op="be merged (no union)"))

    def __or__(self, other: object) -> NoReturn:
        raise TypeError(_STATIC.format(op="be merged (no union)"))

    @classmethod
    def create(cls, *args: object, **kwargs: object) -> NoReturn:
        """Not supported: a static filter is built in memory, then saved (TypeError)."""
        raise TypeError(
            "BinaryFuseFilter cannot be created empty in a mapped file: build it from its keys "
            "in memory, then save() it; bloomkit.open(path) maps it read-only"
        )

    @property
    def bits_per_key(self) -> float:
        """Table bits per distinct key (0.0 for the empty set)."""
        n = len(self)
        return self.nbytes * 8 / n if n else 0.0

    def __repr__(self) -> str:
        extra = ", keyed" if self.keyed else ""
        mapped = ", mapped" if self.mapped else ""
        return (
            f"{type(self).__name__}(count={len(self)}, fingerprint_bits={self.fingerprint_bits}, "
            f"error_rate={self.error_rate:g}, arity={self.arity}, "
            f"bits_per_key={self.bits_per_key:.3f}, nbytes={self.nbytes}, "
            f"seed={self.seed}{extra}{mapped})"
        )


def _choose_bits(fingerprint_bits: int | None, error_rate: float | None) -> int:
    if error_rate is not None:
        if fingerprint_bits is not None:
            raise TypeError("give fingerprint_bits or error_rate, not both")
        return fingerprint_bits_for(error_rate)
    if fingerprint_bits is None:
        return 8
    if isinstance(fingerprint_bits, bool) or not isinstance(fingerprint_bits, int):
        raise TypeError(
            f"fingerprint_bits must be an int, not {type(fingerprint_bits).__name__}"
        )
    if fingerprint_bits not in FINGERPRINT_BITS:
        raise ValueError(f"fingerprint_bits must be 8, 16 or 32, got {fingerprint_bits}")
    return fingerprint_bits
