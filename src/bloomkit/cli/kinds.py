"""What the ``bloomkit`` command line does with each structure kind.

Every kind ``--kind`` lists (every class registered with
:func:`bloomkit.persist.register_kind`) builds, adds, queries, merges where
the Python class merges, and prints its own summary.  The kinds differ in
four ways, each decided here so the subcommands in commands.py stay generic:

- sizing: membership filters take ``(capacity, error_rate)``;
  CountMinSketch takes ``(epsilon, delta)`` (``-p`` is epsilon, ``--delta``
  delta; the line count plays no part); TinyLFU takes only a capacity.
- adding: ``add_many`` for filters and CountMinSketch, ``record_many`` for
  TinyLFU.
- querying: a filter answers yes/no; a sketch answers a count estimate
  (CountMinSketch: an upper bound of the key's count; TinyLFU: its aging
  frequency, 0..16).  A key counts as present when its answer is non-zero.
- merging: ``union``/``intersection`` where the class has them, else its
  ``merge`` (QuotientFilter returns a new filter, CountMinSketch adds in
  place and returns itself).  TinyLFU does not merge.

Every such difference is read from the kind's descriptor (``_core.KINDS``,
bk_kind.h), never from its class name: a kind with a capacity and an error
rate is sized by them, one with a capacity only by it (TinyLFU), one with
neither that is not static by (epsilon, delta) (CountMinSketch).

Static kinds (BinaryFuseFilter, descriptor ``static``) are the exception to all
four: ``build`` collects the 64-bit hashes of every key (8 bytes a key),
then builds the filter in one call (``-p`` picks the fingerprint width, no
capacity); ``add`` and ``merge`` refuse with a message saying why.
"""

from __future__ import annotations

import math
from typing import Any

from .. import _core, _descriptor, _domains
from ..persist.kinds import KINDS
from .errors import EXIT_INCOMPATIBLE, CliError

DEFAULT_RATE = 0.01
DEFAULT_DELTA = 0.01

MERGE_HINT = (
    "files merge only when built alike: the same --kind/--layout, --capacity, -p and --seed "
    "(plain `bloomkit build` sizes each file to its own line count, so pass one --capacity "
    "to every build)"
)

# A file whose estimated false-positive rate passes OVERFULL_FACTOR times its
# target gets a warning on stderr (issue #16: a 1M-capacity file holding 21.5M
# keys answered "yes" to 99.999% of absent keys and the CLI said nothing).
# 2x is well past the estimate's noise (a filter at capacity estimates about
# its target) and is reached at about 1.17x capacity (classic, p = 0.01, k = 7:
# (1 - e^(-7 * 1.17 / 9.585))^7 = 0.0207).
OVERFULL_FACTOR = 2.0


def kind_names() -> list[str]:
    """The class names ``--kind`` accepts, in kind-id order."""
    return [cls.__name__ for _, cls in sorted(KINDS.items())]


def parse_kind(text: str) -> str:
    """argparse type of ``--kind``: any case of a registered class name."""
    for name in kind_names():
        if name.lower() == text.lower():
            return name
    return text  # argparse's choices= then names the valid ones


def kind_class(name: str) -> type[Any]:
    desc = _core.KINDS.get(name)
    cls = KINDS.get(desc.id) if desc is not None else None
    if cls is not None:
        return cls
    raise CliError(f"unknown kind {name!r} (known: {', '.join(kind_names())})")


def is_sketch(obj: Any) -> bool:
    """A structure that answers a count estimate, not yes/no."""
    return hasattr(obj, "estimate_many") or hasattr(obj, "record_many")


def descriptor(cls: type[Any]) -> _core.Kind:
    """The kind descriptor of a registered class."""
    desc = _descriptor.of(cls)
    if desc is None:  # pragma: no cover - every class the CLI sees is registered
        raise CliError(f"{cls.__name__} is not a bloomkit kind")
    return desc


def sized_by_keys(cls: type[Any]) -> bool:
    """Whether the default capacity (the line count) sizes this kind."""
    desc = descriptor(cls)
    return desc.capacity_param is not None and not desc.static


def sized_by_error(cls: type[Any]) -> bool:
    """A kind sized by (epsilon, delta): no capacity, no error rate, not static."""
    desc = descriptor(cls)
    return desc.capacity_param is None and desc.error_rate_param is None and not desc.static


def delta_kinds() -> str:
    """The kinds --delta applies to (those sized by (epsilon, delta))."""
    return " or ".join(n for n, k in _core.KINDS.items()
                       if k.capacity_param is None and k.error_rate_param is None
                       and not k.static)


def is_static(cls: type[Any]) -> bool:
    """A kind built once from all its keys (no add, no merge)."""
    return descriptor(cls).static


STATIC_NO_ADD = ("{name} is static: built once from all its keys, it cannot take more; "
                 "rebuild it with `bloomkit build --kind {name}` from the old keys plus the "
                 "new, or use a kind that grows (BlockedBloomFilter, CuckooFilter, ...)")


class StaticBuilder:
    """Collects the 64-bit hashes of a static kind's keys chunk by chunk (8
    bytes a key, not the keys), then builds the filter in one call."""

    def __init__(self, cls: type[Any], capacity: int | None, rate: float | None,
                 delta: float | None, seed: int, secret: bytes | None = None) -> None:
        from array import array

        name = cls.__name__
        if capacity is not None:
            raise CliError(f"{name} has no capacity: it is built from exactly the keys given; "
                           "drop --capacity")
        if delta is not None:
            raise CliError(f"--delta applies only to --kind {delta_kinds()}, not {name}")
        self.cls, self.rate, self.seed, self.secret = cls, rate, seed, secret
        self.hashes = array("Q")
        self.domains = 0  # the key domains hashed, recorded in the filter (#31 item 1)

    def add_many(self, keys: list[bytes]) -> None:
        raw, seen = self.cls._hash_keys(keys, seed=self.seed, secret=self.secret, domains=True)
        self.hashes.frombytes(raw)
        self.domains |= seen

    def build(self) -> Any:
        return self.cls.from_hashes(self.hashes, error_rate=self.rate, seed=self.seed,
                                    secret=self.secret, reuse=True,
                                    key_types=_domains.names(self.domains))


def make(cls: type[Any], capacity: int | None, rate: float | None, delta: float | None,
         seed: int, secret: bytes | None = None) -> Any:
    """A new empty structure of ``cls``.  ``capacity`` is None for a kind the
    line count does not size when --capacity was not given; ``rate`` and
    ``delta`` are None when not given.  An option that does not apply to the
    kind is refused, not ignored."""
    name = cls.__name__
    if delta is not None and not sized_by_error(cls):
        raise CliError(f"--delta applies only to --kind {delta_kinds()}, not {name}")
    if sized_by_error(cls):
        if capacity is not None:
            raise CliError(f"{name} has no capacity: drop --capacity (it is sized by "
                           "-p, the error per total count, and --delta)")
        return cls.from_error(DEFAULT_RATE if rate is None else rate,
                              DEFAULT_DELTA if delta is None else delta, seed=seed,
                              secret=secret)
    if capacity is None:
        raise CliError(f"{name} needs a capacity")  # pragma: no cover - commands.py gives one
    if descriptor(cls).error_rate_param is None:
        if rate is not None:
            raise CliError(f"{name} has no error rate: drop -p (it is sized by --capacity)")
        return cls(capacity, seed=seed, secret=secret)
    return cls(capacity, DEFAULT_RATE if rate is None else rate, seed=seed, secret=secret)


def feed(obj: Any, keys: list[Any]) -> int | None:
    """Add a chunk of keys; the number that were new, when the kind knows it."""
    if isinstance(obj, StaticBuilder):
        obj.add_many(keys)
        return None
    if is_static(type(obj)):
        raise CliError(STATIC_NO_ADD.format(name=type(obj).__name__))
    if hasattr(obj, "record_many"):
        obj.record_many(keys)
        return None
    added = obj.add_many(keys)
    return None if is_sketch(obj) else int(added)


def answers(obj: Any, keys: list[Any]) -> list[int]:
    """Per key: 1/0 (present or not) for a filter, the count estimate for a sketch."""
    if hasattr(obj, "estimate_many"):
        return [int(v) for v in obj.estimate_many(keys)]
    if hasattr(obj, "record_many"):
        return [int(obj.estimate(k)) for k in keys]
    return [1 if hit else 0 for hit in obj.contains_many(keys)]


def combine_into(out: Any, other: Any, intersection: bool) -> Any:
    """``out`` merged with ``other``: in place where the class can (``|=``,
    ``&=``, CountMinSketch's ``merge``), else a new structure
    (QuotientFilter's ``merge``).  ``other`` may be a read-only map."""
    name = type(out).__name__
    if is_static(type(out)):
        raise CliError(f"{name} cannot be merged: a static filter has no union (its table is "
                       "solved for exactly its keys); build one filter from all the keys",
                       EXIT_INCOMPATIBLE)
    if intersection:
        if not callable(getattr(out, "intersection", None)):
            raise CliError(f"{name} has no intersection (in Python either); "
                           "merge without --intersection")
        if hasattr(type(out), "__iand__"):
            out &= other
            return out
        return out.intersection(other)
    if callable(getattr(out, "union", None)):
        if hasattr(type(out), "__ior__"):
            out |= other
            return out
        return out.union(other)
    if not callable(getattr(out, "merge", None)):
        raise CliError(f"{name} cannot be merged (in Python either)", EXIT_INCOMPATIBLE)
    return out.merge(other)  # QuotientFilter: a new filter; CountMinSketch: itself


def rewritten_on_add(cls: type[Any]) -> bool:
    """Kinds that cannot be mapped for writing: ``add`` loads, adds and saves."""
    return descriptor(cls).grows


def overfull(obj: Any) -> str | None:
    """A warning when the estimated false-positive rate passes
    OVERFULL_FACTOR times the target, else None (sketches have no target)."""
    target = getattr(obj, "error_rate", None)
    estimate = getattr(obj, "estimate_error_rate", None)
    if target is None or not callable(estimate):
        return None
    est = float(estimate())
    if not (est > OVERFULL_FACTOR * target):  # NaN: no warning
        return None
    held = ""
    count = getattr(obj, "estimate_count", None)
    if callable(count):
        n = float(count())
        held = (f"about {n:,.0f} keys for capacity {obj.capacity:,}, " if math.isfinite(n)
                else f"more keys than it can count for capacity {obj.capacity:,}, ")
    return (f"overfull: {held}estimated false-positive rate {est:.5g} is over "
            f"{OVERFULL_FACTOR:g}x the target {target:g}; rebuild with a larger --capacity")


# how a summary shows each shape attribute a kind has, in order
_SHAPE = (("num_bits", "{:,} bits"), ("num_hashes", "k={}"), ("num_buckets", "{:,} buckets"),
          ("fingerprint_bits", "{}-bit fingerprints"), ("q", "q={}"), ("r", "r={}"),
          ("num_links", "{} link(s)"), ("width", "width {:,}"), ("depth", "depth {}"),
          ("num_counters", "{:,} counters"))


def summary(obj: Any, path: str, nbytes: int, keys: int | None,
            read: str | None = None) -> str:
    """One line: what was written, keys read (and ``read``: what they were
    read from), shape, bytes, estimated rate."""
    parts = [] if keys is None else [f"{keys:,} keys" + (f" ({read})" if read else "")]
    for attr, fmt in _SHAPE:
        value = getattr(obj, attr, None)
        if attr == "num_counters" and hasattr(obj, "num_bits"):
            continue  # a counting filter: one counter per "bit", said once
        if isinstance(value, int) and not isinstance(value, bool):
            parts.append(fmt.format(value))
    parts.append(f"{nbytes:,} bytes")
    parts.append("keys: " + _domains.describe(getattr(obj, "key_types", None)))
    if getattr(obj, "keyed", False):
        parts.append("keyed (SipHash-2-4)")
    estimate = getattr(obj, "estimate_error_rate", None)
    if is_static(type(obj)):
        parts.append(f"{obj.bits_per_key:.2f} bits/key, false-positive rate {obj.error_rate:g}")
    elif callable(estimate):
        rate = f"estimated rate {float(estimate()):.3g}"
        target = getattr(obj, "error_rate", None)
        parts.append(rate + (f" (target {target:g})" if target is not None else ""))
    elif hasattr(obj, "epsilon"):
        parts.append(f"estimates within {obj.epsilon:.3g} x total with probability "
                     f"{1 - obj.delta:.3g}")
    return f"{path}: {type(obj).__name__}, " + ", ".join(parts)
