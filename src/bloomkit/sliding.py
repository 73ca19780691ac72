"""The sliding-window Bloom filter: an age-partitioned Bloom filter.

Shtul, Baquero and Almeida, "Age-Partitioned Bloom Filters" (2020).  A thin
facade over the C type :class:`bloomkit.SlidingBase`: the sizing
happens here (through the C model of ``bk_sliding_model.c``), every per-key and
batch operation is C.  See docs/sliding.md for the exact algorithm, the
guarantees and the sizing table.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, overload

from . import _core, _descriptor
from ._typing import Key
from .errors import SlidingWindowWarning
from .persist import Persistent

__all__ = [
    "DEFAULT_BURST", "MAX_GENERATIONS", "SlidingBloomFilter", "SlidingDesign",
    "SlidingWindowWarning", "sliding_design", "window_capacity",
]

_K = TypeVar("_K", contravariant=True)  # the key type (see _typing.py)
_T = TypeVar("_T")  # the caller's objects, mapped to a Key by key=

KIND_SLIDING_BLOOM: int = _core.KINDS["SlidingBloomFilter"].id

MAX_GENERATIONS = 32
"""Largest l the sizing picks.  More generations cost fewer bits a key
(the window's slack, capacity / l, shrinks and the slices' fill evens out)
but a query probes at least (k + l) / k slices: at 1e-2, l = 16 costs 20.9
bits a key, l = 32 19.9, l = 64 19.6 (docs/sliding.md); at 32 an absent
key's query makes about 9 probes (measured at 1e-2: the checkpoints and the
neighbours of the set ones)."""

LAYOUTS = ("blocked", "sliced")
"""``layout=`` values: "blocked" (layout_version 1: every slice's bit of a
key in one 128-byte block; one memory round trip a query) and "sliced"
(layout_version 0: one bit array a slice, the layout of every file
written before it)."""

BLOCKED_MIN_ERROR_RATE = 1e-4
"""The default layout is "blocked" from this rate up and "sliced" below:
at 1e-4 blocked costs 47.0 bits a window key (2.45x a Bloom filter, 1.31x
sliced), at 1e-5 63.7 (2.66x, 1.42x; at most 32 slices fit a block)."""

# Its own error-rate range (the descriptor's, bk_sliding.h: what the sizing
# searches) and the common capacity limit.
_KIND = _core.KINDS["SlidingBloomFilter"]
MIN_ERROR_RATE: float = _KIND.error_rate_min or 0.0
MAX_ERROR_RATE: float = _KIND.error_rate_max or 0.0
MAX_CAPACITY: int = _KIND.capacity_max or 0
SLICE_ALIGN = 512


if TYPE_CHECKING:
    # The C type _core.SlidingBase (py_sliding.c) as mypy sees it: the stub of a
    # structure's C type lives in its facade (_core.pyi keeps the module's functions and
    # the shared bases).
    from ._core import Updatable

    _SlidingSelf = TypeVar("_SlidingSelf", bound="SlidingBase[Any]")

    class SlidingBase(Updatable[_K]):
        def __new__(
            cls: type[_SlidingSelf],
            k: int,
            l: int,  # noqa: E741 (the paper's number of slices, as in the C glue)
            slice_bits: int,
            capacity: int,
            error_rate: float,
            window_us: int = 0,
            now: float | None = None,
            *,
            seed: int = 0,
            secret: bytes | None = None,
            key: Any = None,
            layout: int = 0,
        ) -> _SlidingSelf: ...
        def clear(self) -> None: ...
        def estimate_error_rate(self) -> float: ...
        def _advance(self) -> None: ...
        def _raw_stats(self) -> dict[str, int]: ...
        def _key_hash(self, key: object, /) -> int: ...
        def _slice_positions(self, key: object, /) -> list[int]: ...
        @classmethod
        def _design(cls, error_rate: float, max_l: int, /) -> tuple[int, int, float]: ...
        @classmethod
        def _model_rate(cls, k: int, slices: int, m_over_g: float, /) -> float: ...
        @classmethod
        def _design_blocked(cls, error_rate: float, /) -> tuple[int, int, float]: ...
        @classmethod
        def _model_rate_blocked(
            cls, k: int, slices: int, lam: float, /
        ) -> tuple[float, float]: ...
        @property
        def layout(self) -> str: ...
        @property
        def layout_version(self) -> int: ...
        @property
        def clock(self) -> Callable[[], float]: ...
        @clock.setter
        def clock(self, value: Callable[[], float]) -> None: ...
        @property
        def num_hashes(self) -> int: ...
        @property
        def generations(self) -> int: ...
        @property
        def num_slices(self) -> int: ...
        @property
        def slice_bits(self) -> int: ...
        @property
        def capacity(self) -> int: ...
        @property
        def error_rate(self) -> float: ...
        @property
        def generation_length(self) -> int: ...
        @property
        def generation(self) -> int: ...
        @property
        def early_shifts(self) -> int: ...
        @property
        def window_us(self) -> int: ...
        @property
        def nbytes(self) -> int: ...

else:
    SlidingBase = _core.SlidingBase


@dataclass(frozen=True)
class SlidingDesign:
    """The shape chosen for ``(capacity, error_rate)``."""

    capacity: int
    error_rate: float
    num_hashes: int  # k
    generations: int  # l
    slice_bits: int  # m
    generation_length: int  # G = ceil(capacity / l)
    layout: str = "sliced"  # "blocked" (layout_version 1) or "sliced" (0)

    @property
    def num_slices(self) -> int:
        return self.num_hashes + self.generations

    @property
    def num_bits(self) -> int:
        """Bits of all slices together (blocked: every block's 32 lanes,
        the unused ones included)."""
        if self.layout == "blocked":
            return 32 * self.slice_bits
        return self.num_slices * self.slice_bits

    @property
    def bits_per_key(self) -> float:
        """Slice bits per key of the window (capacity)."""
        return self.num_bits / self.capacity

    @property
    def forget_after(self) -> int:
        """Count mode: adds after which every bit of a key is cleared, so it
        is reported at the base rate only: (l + k) G.  Between l G and this
        its run breaks one slice per generation: after (l + 1 + j) G adds it
        is still reported with a chance of about f^(j+1) (f ~ 1/2, the fill
        of a full slice)."""
        return (self.generations + self.num_hashes) * self.generation_length

    @property
    def remember_for(self) -> int:
        """Count mode: a key is present while at most l G adds followed it."""
        return self.generations * self.generation_length


@functools.lru_cache(maxsize=64)
def _shape(error_rate: float) -> tuple[int, int, float]:
    k, gens, r = SlidingBase._design(error_rate, MAX_GENERATIONS)
    return int(k), int(gens), float(r)


@functools.lru_cache(maxsize=64)
def _shape_blocked(error_rate: float) -> tuple[int, int, float]:
    k, gens, lam = SlidingBase._design_blocked(error_rate)
    return int(k), int(gens), float(lam)


def _layout(layout: str | None, error_rate: float) -> str:
    if layout is None:
        return "blocked" if error_rate >= BLOCKED_MIN_ERROR_RATE else "sliced"
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be 'blocked' or 'sliced', got {layout!r}")
    return layout


def sliding_design(capacity: int, error_rate: float = 0.01,
                   layout: str | None = None) -> SlidingDesign:
    """Size a sliding filter; TypeError/ValueError say what is allowed.

    ``layout`` None picks "blocked" for ``error_rate >= 1e-4``, else
    "sliced" (:data:`BLOCKED_MIN_ERROR_RATE`).  Sliced: k and l minimise the
    bits per window key under the exact worst-moment rate of bk_sliding_model.c
    (independent of the capacity); the slice size is then m = (m / G) G
    rounded up to a multiple of 512 bits.  Blocked: k, l and the keys a
    block a generation (lam) from bk_sliding_blocked.c's model of the
    blocks' shared load; B = ceil(G / lam) blocks, m = 32 B."""
    if isinstance(capacity, bool) or not isinstance(capacity, int):
        raise TypeError(f"capacity must be an int, not {type(capacity).__name__}")
    if isinstance(error_rate, bool) or not isinstance(error_rate, (int, float)):
        raise TypeError(f"error_rate must be a float, not {type(error_rate).__name__}")
    if not 1 <= capacity <= MAX_CAPACITY:
        raise ValueError(f"capacity must be in {_descriptor.capacity_range(_KIND)}, got {capacity}")
    error_rate = float(error_rate)
    if not MIN_ERROR_RATE <= error_rate <= MAX_ERROR_RATE:
        raise ValueError(f"error_rate must be in {_descriptor.error_rate_range(_KIND)}, "
                         f"got {error_rate!r}")
    layout = _layout(layout, error_rate)
    if layout == "blocked":
        k, gens, lam = _shape_blocked(error_rate)
        g = -(-capacity // gens)
        m = 32 * max(1, math.ceil(g / lam))
        bits = 32 * m
    else:
        k, gens, r = _shape(error_rate)
        g = -(-capacity // gens)
        m = max(SLICE_ALIGN, math.ceil(r * g / SLICE_ALIGN) * SLICE_ALIGN)
        bits = (k + gens) * m
    if bits > 2**46:
        raise ValueError(f"capacity {capacity} at {error_rate:g} needs more than 2**46 bits")
    return SlidingDesign(capacity, error_rate, k, gens, m, g, layout)


def _seconds_to_us(window: float) -> int:
    if isinstance(window, bool) or not isinstance(window, (int, float)):
        raise TypeError(f"window must be seconds (a float or int) or None, not "
                        f"{type(window).__name__}")
    if not (window > 0 and math.isfinite(window)):
        raise ValueError(f"window must be a positive number of seconds, got {window!r}")
    us = math.ceil(window * 1_000_000)
    if us > 2**62:
        raise ValueError(f"window must be below 2**62 microseconds, got {window!r} s")
    return us


DEFAULT_BURST = 2.0
"""The burst factor ``window_capacity`` assumes when neither ``burst`` nor
``peak_rate`` is given: the busiest window / l seconds see twice the
window's average rate."""


def _positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def window_capacity(window: float, keys_per_window: int, error_rate: float = 0.01, *,
                    burst: float | None = None, peak_rate: float | None = None,
                    layout: str | None = None) -> int:
    """The ``capacity`` a time-mode filter needs for what a user knows.

    A time-mode filter holds l generations of ``window / l`` seconds and
    ``capacity / l`` adds each; a generation that fills before its time is
    up shifts EARLY, which shortens the window (``stats()["early_shifts"]``,
    :class:`SlidingWindowWarning`).  So the capacity is not the keys of a
    window: it must cover the busiest ``window / l`` seconds, l times over.
    State the keys a window holds on average and either ``burst`` (the
    busiest ``window / l`` seconds' rate over the window's average rate,
    >= 1; default :data:`DEFAULT_BURST`) or ``peak_rate`` (keys a second
    at the busiest).  Returns ``max(keys_per_window, l * ceil(peak * D))``
    with ``peak = peak_rate`` or ``burst * keys_per_window / window`` and
    ``D = ceil(window_us / l)`` seconds the generation's duration: no early
    shift while no generation sees more than ``peak * D`` adds.  l (and so
    the result) depends on ``layout`` (as the constructor's)."""
    if burst is not None and peak_rate is not None:
        raise TypeError("give burst or peak_rate, not both")
    w_us = _seconds_to_us(window)
    if isinstance(keys_per_window, bool) or not isinstance(keys_per_window, int):
        raise TypeError(f"keys_per_window must be an int, not {type(keys_per_window).__name__}")
    if not 1 <= keys_per_window <= MAX_CAPACITY:
        raise ValueError(f"keys_per_window must be in {_descriptor.capacity_range(_KIND)}, "
                         f"got {keys_per_window}")
    if peak_rate is not None:
        peak = _positive("peak_rate", peak_rate)
    else:
        b = DEFAULT_BURST if burst is None else _positive("burst", burst)
        if b < 1:
            raise ValueError(f"burst must be >= 1 (peak over average rate), got {burst!r}")
        peak = b * keys_per_window / (w_us / 1e6)
    gens = sliding_design(1, error_rate, layout).generations  # l depends on the layout
    duration_us = -(-w_us // gens)
    per_gen = math.ceil(peak * duration_us / 1e6 - 1e-9)  # keys in the busiest generation
    capacity = max(keys_per_window, gens * max(1, per_gen))
    if capacity > MAX_CAPACITY:
        raise ValueError(f"{capacity} keys a window exceed "
                         f"{_descriptor.power_text(MAX_CAPACITY)}: state a lower rate")
    return capacity


class SlidingBloomFilter(Persistent, SlidingBase[_K]):
    """Membership over a sliding window: the last ``capacity`` adds, or the
    last ``window`` seconds.

    ``SlidingBloomFilter(capacity, error_rate=0.01, *, window=None, seed=0,
    key=None, secret=None, clock=None, layout=None)``.  ``layout`` (see
    :data:`LAYOUTS`): "blocked" by default from 1e-4 up (one memory round
    trip a query, about 12% more bits at 1%), "sliced" below.

    Count mode (``window=None``): every key among the last ``capacity`` adds
    (``design.remember_for`` = l ceil(capacity / l) >= capacity) is present;
    a key is gone (reported at the base rate only) once
    ``design.forget_after`` = (l + k) ceil(capacity / l) adds followed it,
    and fades in between (docs/sliding.md).
    Time mode (``window`` seconds): every key added within the last
    ``window`` seconds is present, provided no ``window / l`` seconds see
    more than ``capacity / l`` adds; if they do, the filter shifts early to
    keep the rate, counts it (``stats()``) and warns
    (:class:`SlidingWindowWarning`).  ``clock`` (default ``time.time``)
    gives seconds since the epoch; inject one for tests.  The
    false-positive rate is at most ``error_rate`` at every moment.
    ``add(key)`` returns True when the key was absent from the window.
    """

    __slots__ = ()
    _bk_kind = KIND_SLIDING_BLOOM

    @overload
    def __new__(
        cls, capacity: int, error_rate: float = 0.01, *, window: float | None = None,
        seed: int = 0, key: None = None, secret: bytes | None = None,
        clock: Callable[[], float] | None = None, layout: str | None = None,
    ) -> SlidingBloomFilter[Key]: ...
    @overload
    def __new__(
        cls, capacity: int, error_rate: float = 0.01, *, window: float | None = None,
        seed: int = 0, key: Callable[[_T], Key], secret: bytes | None = None,
        clock: Callable[[], float] | None = None, layout: str | None = None,
    ) -> SlidingBloomFilter[_T]: ...
    def __new__(
        cls,
        capacity: int,
        error_rate: float = 0.01,
        *,
        window: float | None = None,
        seed: int = 0,
        key: Callable[[Any], Key] | None = None,
        secret: bytes | None = None,
        clock: Callable[[], float] | None = None,
        layout: str | None = None,
    ) -> SlidingBloomFilter[Any]:
        d = sliding_design(capacity, error_rate, layout)
        window_us = 0 if window is None else _seconds_to_us(window)
        if clock is not None and not callable(clock):
            raise TypeError(f"clock must be a callable returning seconds, not "
                            f"{type(clock).__name__}")
        now = (clock or time.time)() if window_us else None
        self = super().__new__(
            cls, d.num_hashes, d.generations, d.slice_bits, d.capacity, d.error_rate,
            window_us, now, seed=seed, secret=secret, key=key,
            layout=1 if d.layout == "blocked" else 0,
        )
        if clock is not None:
            self.clock = clock  # held by the C object (py_sliding.c)
        return self

    @classmethod
    def for_window(
        cls, window: float, keys_per_window: int, error_rate: float = 0.01, *,
        burst: float | None = None, peak_rate: float | None = None, seed: int = 0,
        key: Callable[[Any], Key] | None = None, secret: bytes | None = None,
        clock: Callable[[], float] | None = None, layout: str | None = None,
    ) -> SlidingBloomFilter[Any]:
        """A time-mode filter sized from what a user knows: the keys a
        ``window`` (seconds) holds on average and the ``burst`` factor
        (default 2) or the ``peak_rate`` (keys a second at the busiest);
        the capacity is :func:`window_capacity`'s (docs/sliding.md)."""
        capacity = window_capacity(window, keys_per_window, error_rate, burst=burst,
                                   peak_rate=peak_rate, layout=layout)
        return cls(capacity, error_rate, window=window, seed=seed, key=key, secret=secret,
                   clock=clock, layout=layout)

    @property
    def mode(self) -> str:
        """"time" (a window of seconds) or "count" (of adds)."""
        return "time" if self.window_us else "count"

    @property
    def window(self) -> float | None:
        """The window in seconds (time mode), or None (count mode)."""
        us = self.window_us
        return us / 1_000_000 if us else None

    @property
    def design(self) -> SlidingDesign:
        """The shape of this filter."""
        return SlidingDesign(self.capacity, self.error_rate, self.num_hashes, self.generations,
                             self.slice_bits, self.generation_length, self.layout)

    # ---- statistics -------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Counters and guarantees now (at the clock's time in time mode).

        ``keys_in_window`` insertions the window holds (what ``len`` gives);
        ``generation``, ``generation_count`` (insertions in the current one),
        ``generation_length``; count mode ``remember_for`` / ``forget_after``
        (adds); time mode ``window``, ``guaranteed_window`` (seconds the adds
        of which are all present now; below ``window`` only after early
        shifts), ``shortened_by`` (window - guaranteed_window, >= 0),
        ``early_shifts``, ``pending_shifts``."""
        raw = self._raw_stats()
        d = self.design
        out: dict[str, Any] = {
            "mode": "time" if raw["window_us"] else "count",
            "layout": self.layout,
            "capacity": self.capacity,
            "error_rate": self.error_rate,
            "num_hashes": raw["k"],
            "generations": raw["l"],
            "slice_bits": raw["slice_bits"],
            "num_bits": d.num_bits,
            "generation": raw["generation"],
            "generation_count": raw["count"],
            "generation_length": raw["generation_length"],
            "keys_in_window": raw["window_count"],
            "inserted": raw["inserted"],
            "estimated_error_rate": self.estimate_error_rate(),
        }
        if raw["window_us"]:
            window = raw["window_us"] / 1e6
            # the adds since the birth of the slice of age l are all present;
            # without early shifts that reaches back at least one window
            guaranteed = window if raw["early_shifts"] == 0 else min(
                window, raw["lookback_us"] / 1e6)
            out.update({
                "window": window,
                "generation_seconds": -(-raw["window_us"] // raw["l"]) / 1e6,
                "guaranteed_window": guaranteed,
                "shortened_by": max(0.0, window - guaranteed),
                "early_shifts": raw["early_shifts"],
                "pending_shifts": raw["pending"],
            })
        else:
            out.update({"remember_for": d.remember_for, "forget_after": d.forget_after})
        return out

    def __repr__(self) -> str:
        extra = ", keyed" if self.keyed else ""
        mapped = ", mapped" if self.mapped else ""
        mode = f"window={self.window:g}" if self.window_us else "window=None"
        return (
            f"{type(self).__name__}(capacity={self.capacity}, error_rate={self.error_rate:g}, "
            f"{mode}, num_hashes={self.num_hashes}, generations={self.generations}, "
            f"slice_bits={self.slice_bits}, generation={self.generation}, seed={self.seed}"
            f"{extra}{mapped})"
        )
