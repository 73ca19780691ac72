"""Distributed builds on Dask: filters over data that does not fit one machine.

Install with ``pip install 'bloomkit[dask]'``.  Three operations:

- :func:`build` builds any bloomkit structure over a ``dask.bag.Bag``, a
  ``dask.dataframe`` Series (one column) or a 1-d ``dask.array.Array``.
  Every partition builds a partial structure in C with the batch path
  (``add_many``; numpy integer and fixed-width bytes blocks are hashed
  without the GIL), and the partials are combined by a tree of ``merge`` /
  ``union`` calls, ``split_every`` at a time.  The result is byte-identical
  (``to_bytes``) to a single-machine build with the same parameters that
  ends with ``_recount()`` (see "The count field" in docs/dask.md).
- :func:`reduce_filters` is that tree on its own, for partial structures
  you built yourself (one per file, per day, ...); incompatible partials
  raise :class:`bloomkit.IncompatibleFiltersError`.
- :func:`filter_membership` keeps the items / rows whose key the filter may
  contain (the "Bloom filter join" of big-data engines); the filter goes to
  each worker once.  :func:`semi_join` builds the filter from the right
  side and applies it to the left side.

Static kinds (:class:`bloomkit.BinaryFuseFilter`) have no union: their
partitions ship the sorted distinct 64-bit hashes of their keys (8 bytes a
key, never the keys) and one task builds the filter from all of them, byte
for byte the filter a single machine builds from the same keys.

Structures travel between processes only as their state bytes (the one
format of docs/FORMAT.md), so workers with different ``PYTHONHASHSEED`` or
on other machines agree, and keyed filters (``secret=``) work too: the
secret is part of the task graph, since every worker must hash with it.
"""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import Callable, Sequence
from typing import Any

from . import _descriptor, _domains
from .bloom import BloomFilter
from .persist import loads

__all__ = [
    "build",
    "build_delayed",
    "choose_capacity",
    "filter_membership",
    "reduce_filters",
    "semi_join",
]

log = logging.getLogger("bloomkit.dask")

#: Default fan-in of the reduction tree: how many partials one task merges.
#: Memory of a merge task is about (split_every + 1) filters.
SPLIT_EVERY = 8


# ---- Begin logic for collections -------------------------------------------------------


def _collection_kind(collection: Any, *, frames: bool = False) -> str:
    """'bag', 'series', 'frame' (only if ``frames``) or 'array'; TypeError otherwise."""
    import dask.array as da
    import dask.bag as db

    if isinstance(collection, db.Bag):
        return "bag"
    if isinstance(collection, da.Array):
        if collection.ndim != 1:
            raise ValueError(f"a dask array must be 1-d, not {collection.ndim}-d")
        return "array"
    dd: Any
    try:
        import dask.dataframe as dd
    except ImportError:  # dask without pandas: no dataframes to match
        dd = None
    if dd is not None:
        if isinstance(collection, dd.Series):
            return "series"
        if isinstance(collection, dd.DataFrame):
            if frames:
                return "frame"
            raise TypeError("pass one column of the dask DataFrame (df['key']), not the frame")
    raise TypeError(
        "expected a dask.bag.Bag, a dask.dataframe Series or a 1-d dask.array.Array, "
        f"not {type(collection).__name__}"
    )


def _partitions(collection: Any, kind: str) -> list[Any]:
    """One Delayed per partition / block."""
    if kind == "array":
        blocks = collection.to_delayed(optimize_graph=True)
        return list(blocks.ravel())
    return list(collection.to_delayed(optimize_graph=True))


def _batch(part: Any) -> Any:
    """The keys of one partition in the form add_many takes fastest.

    numpy integer, bool and fixed-width bytes arrays go in as buffers (hashed
    without the GIL); pandas Series drop their nulls (a null never matches)
    and go in as numpy arrays when integer, else as lists; lists and tuples
    go in as they are.
    """
    import numpy as np

    if isinstance(part, (list, tuple)):
        return part
    if isinstance(part, np.ndarray):
        if part.dtype.kind in "iubS":
            return np.ascontiguousarray(part.reshape(-1))
        return part.reshape(-1).tolist()
    if hasattr(part, "dropna") and hasattr(part, "to_numpy"):  # a pandas Series
        part = part.dropna()
        arr = part.to_numpy()
        if arr.dtype.kind in "iub":
            return np.ascontiguousarray(arr)
        return part.tolist()
    return list(part)


# ---- End logic for collections ---------------------------------------------------------

# ---- Begin logic for the reduction tree ------------------------------------------------


class _Spec:
    """How a task makes an empty structure and reads states back (picklable)."""

    __slots__ = ("cls", "kwargs", "secret")

    def __init__(self, cls: type[Any], kwargs: dict[str, Any], secret: bytes | None) -> None:
        self.cls = cls
        self.kwargs = kwargs
        self.secret = secret

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Spec, (self.cls, self.kwargs, self.secret))

    def new(self) -> Any:
        return self.cls(**self.kwargs)


def _partial(part: Any, spec: _Spec) -> bytes:
    """Task: a partial structure over one partition, as its state bytes."""
    f = spec.new()
    f.add_many(_batch(part))
    data: bytes = f.to_bytes()
    return data


def _load(item: Any, secret: bytes | None) -> Any:
    """A state (bytes) read back, or a structure object copied (never mutate inputs)."""
    if isinstance(item, (bytes, bytearray, memoryview)):
        return loads(item, secret=secret)
    if hasattr(item, "to_bytes") and hasattr(item, "copy"):
        return item.copy()
    raise TypeError(f"expected a bloomkit structure or its state bytes, not {type(item).__name__}")


def _merge_objects(objs: Sequence[Any]) -> Any:
    """Merge freshly loaded structures with their own combine method.

    ``merge`` (counter sums: count-min sketches) is preferred over ``union``
    (bitwise OR for Bloom layouts, saturating counter sums for counting
    filters); an in-place
    ``merge`` returning None and one returning the result both work.
    """
    acc = objs[0]
    rest = list(objs[1:])
    if not rest:
        return acc
    if callable(getattr(acc, "merge", None)):
        for o in rest:
            r = acc.merge(o)
            if r is not None:
                acc = r
        return acc
    if callable(getattr(acc, "union", None)):
        return acc.union(*rest)
    raise TypeError(f"{type(acc).__name__} has neither merge() nor union(): it cannot be combined")


def _combine(items: Sequence[Any], secret: bytes | None) -> bytes:
    """Task: merge a group of partial states into one state."""
    merged = _merge_objects([_load(x, secret) for x in items])
    data: bytes = merged.to_bytes()
    return data


def _finish(item: Any, secret: bytes | None) -> bytes:
    """Task: the root.  Bloom layouts store the count estimated from the bits."""
    f = _load(item, secret)
    recount = getattr(f, "_recount", None)
    if callable(recount):
        recount()
    data: bytes = f.to_bytes()
    return data


def _check_split_every(split_every: int) -> int:
    if isinstance(split_every, bool) or not isinstance(split_every, int) or split_every < 2:
        raise ValueError(f"split_every must be an int >= 2, not {split_every!r}")
    return split_every


def _tree(leaves: list[Any], secret: bytes | None, split_every: int, empty: Any) -> Any:
    """A Delayed of the root state: leaves merged ``split_every`` at a time."""
    from dask.delayed import delayed

    combine = delayed(_combine, pure=True)
    finish = delayed(_finish, pure=True)
    if not leaves:
        leaves = [empty]
    level = leaves
    while len(level) > 1:
        level = [
            combine(level[i : i + split_every], secret)
            for i in range(0, len(level), split_every)
        ]
    return finish(level[0], secret)


# ---- End logic for the reduction tree --------------------------------------------------

# ---- Begin logic for static kinds ------------------------------------------------------


def _hash_part(part: Any, cls: type[Any], params: dict[str, Any]) -> tuple[bytes, int]:
    """Task: the sorted distinct 64-bit hashes of one partition's keys
    (native-endian uint64 bytes), and the key domains hashed (a mask of
    bloomkit/_domains.py).  Deduplicating here only shrinks what is
    shipped: the filter depends on the set of hashes alone."""
    import numpy as np

    raw, seen = cls._hash_keys(_batch(part), seed=params.get("seed", 0),
                               secret=params.get("secret"), key=params.get("key"), domains=True)
    data: bytes = np.unique(np.frombuffer(raw, dtype=np.uint64)).tobytes()
    return data, int(seen)


def _static_build(parts: Sequence[tuple[bytes, int]], cls: type[Any],
                  params: dict[str, Any]) -> bytes:
    """Task: the one build, from every partition's hashes (memory: the parts,
    their concatenation, then the construction's ~15 bytes a key), recording
    the key domains of every partition."""
    hashes = bytearray(b"".join(p for p, _ in parts))
    mask = 0
    for _, seen in parts:
        mask |= seen
    f = cls.from_hashes(memoryview(hashes).cast("Q"), reuse=True,
                        key_types=_domains.names(mask), **params)
    data: bytes = f.to_bytes()
    return data


def _static_delayed(collection: Any, kind: type[Any], capacity: Any, error_rate: float | None,
                    params: dict[str, Any]) -> Any:
    from dask.delayed import delayed

    if capacity is not None:
        raise TypeError(f"{kind.__name__} takes no capacity: it is built from exactly its keys")
    unknown = set(params) - {"seed", "secret", "key", "fingerprint_bits"}
    if unknown:
        raise TypeError(f"{kind.__name__} takes no {', '.join(sorted(unknown))}")
    params = dict(params)
    if error_rate is not None:
        params["error_rate"] = error_rate
    kind([], **params)  # bad parameters fail here, on the client, not in a task
    hashing = {k: v for k, v in params.items() if k in ("seed", "secret", "key")}
    part = delayed(_hash_part, pure=True)
    ckind = _collection_kind(collection)
    leaves = [part(p, kind, hashing) for p in _partitions(collection, ckind)]
    build_params = {k: v for k, v in params.items() if k != "key"}
    return delayed(_static_build, pure=True)(leaves, kind, build_params)


# ---- End logic for static kinds --------------------------------------------------------

# ---- Begin logic for capacity ----------------------------------------------------------


def choose_capacity(collection: Any, how: str = "count") -> int:
    """The capacity :func:`build` uses when ``capacity=None`` (one pass over the data).

    ``how="count"`` (default): the number of items (non-null values of a
    Series), an upper bound on the distinct keys, so the filter meets its
    error rate; it over-sizes when keys repeat.  ``how="distinct"``: the
    number of distinct keys: approximate for a Series (``nunique_approx``,
    HyperLogLog, about 1% relative error), exact for a bag or an array (a
    shuffle; costlier).  At least 1.
    """
    kind = _collection_kind(collection)
    if how == "count":
        if kind == "array" and not math.isnan(collection.shape[0]):
            n = int(collection.shape[0])
        else:
            n = int(collection.count().compute())
    elif how == "distinct":
        if kind == "series":
            n = int(collection.nunique_approx().compute())
        elif kind == "bag":
            n = int(collection.distinct().count().compute())
        else:
            import dask.array as da

            n = len(da.unique(collection).compute())
    else:
        raise ValueError(f"how must be 'count' or 'distinct', not {how!r}")
    return max(1, n)


def _accepts(kind: type[Any], name: str) -> bool:
    try:
        sig = inspect.signature(kind)
    except (TypeError, ValueError):
        return True
    return name in sig.parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()
    )


def _spec_for(
    collection: Any,
    kind: type[Any],
    capacity: int | str | None,
    error_rate: float | None,
    params: dict[str, Any],
) -> _Spec:
    if not isinstance(kind, type):
        raise TypeError(f"kind must be a bloomkit structure class, not {type(kind).__name__}")
    if not (callable(getattr(kind, "merge", None)) or callable(getattr(kind, "union", None))):
        raise TypeError(
            f"{kind.__name__} has neither merge() nor union(): it cannot be built in parts"
        )
    kwargs = dict(params)
    if _accepts(kind, "capacity"):
        if capacity is None or isinstance(capacity, str):
            how = "count" if capacity is None else capacity
            chosen = choose_capacity(collection, how)
            log.info("bloomkit.dask.build: capacity=%r -> %d (%s)", capacity, chosen, how)
            capacity = chosen
        kwargs["capacity"] = capacity
    elif capacity is not None:
        raise TypeError(f"{kind.__name__} takes no capacity")
    if error_rate is not None:
        if not _accepts(kind, "error_rate"):
            raise TypeError(f"{kind.__name__} takes no error_rate")
        kwargs["error_rate"] = error_rate
    spec = _Spec(kind, kwargs, params.get("secret"))
    proto = spec.new()  # bad parameters fail here, on the client, not in every task
    if getattr(proto, "conservative", False):
        # Conservative update is not linear: merged partial sketches are valid
        # (never below the truth) but looser than, and not equal to, one build.
        raise ValueError(
            "a conservative-update sketch cannot be built in parts byte-identically; "
            "use conservative=False (or build it in one process)"
        )
    return spec


# ---- End logic for capacity ------------------------------------------------------------


def build_delayed(
    collection: Any,
    kind: type[Any] = BloomFilter,
    capacity: int | str | None = None,
    error_rate: float | None = None,
    *,
    split_every: int = SPLIT_EVERY,
    **params: Any,
) -> Any:
    """Like :func:`build`, but a ``dask.delayed`` object computing the state bytes.

    Load the result with ``bloomkit.loads(data, secret=..., key=...)``.
    Combine it with other computations to share passes over the data.
    """
    split_every = _check_split_every(split_every)
    desc = _descriptor.of(kind)
    if desc is not None and desc.static:
        return _static_delayed(collection, kind, capacity, error_rate, params)
    ckind = _collection_kind(collection)
    spec = _spec_for(collection, kind, capacity, error_rate, params)
    from dask.delayed import delayed

    partial = delayed(_partial, pure=True)
    leaves = [partial(p, spec) for p in _partitions(collection, ckind)]
    return _tree(leaves, spec.secret, split_every, spec.new().to_bytes())


def build(
    collection: Any,
    kind: type[Any] = BloomFilter,
    capacity: int | str | None = None,
    error_rate: float | None = None,
    *,
    split_every: int = SPLIT_EVERY,
    **params: Any,
) -> Any:
    """Build ``kind(capacity, error_rate, **params)`` over a dask collection.

    ``capacity`` and ``error_rate`` are passed only to kinds that take them
    (``error_rate=None``: the kind's default, 0.01 for the Bloom filters);
    shape other kinds with ``params`` (``width=``, ``depth=`` for a
    CountMinSketch).

    ``collection``: a ``dask.bag.Bag``, a ``dask.dataframe`` Series (nulls
    are skipped) or a 1-d ``dask.array.Array``.  ``params`` go to the
    constructor (``seed=``, ``key=``, ``secret=``, ...).  ``capacity=None``
    counts the items first (``"distinct"`` counts distinct keys; see
    :func:`choose_capacity`); the choice is logged on the ``bloomkit.dask``
    logger at INFO and is the result's ``capacity``.

    Runs on the current dask scheduler (a ``distributed.Client`` if one is
    active).  The result equals, byte for byte, a single build of the same
    keys followed by ``_recount()`` for Bloom layouts (or by nothing, for
    structures without a count estimate).

    ``kind=BinaryFuseFilter`` (static, no union): no capacity; ``error_rate``
    or ``fingerprint_bits=`` pick the width; partitions ship their keys'
    64-bit hashes and one task builds the filter (8 bytes a key of hashes
    in that task, twice while they are joined, plus the construction's ~15
    bytes a key).  Equal, byte for byte, to ``BinaryFuseFilter(keys)`` on
    one machine.
    """
    root = build_delayed(
        collection, kind, capacity, error_rate, split_every=split_every, **params
    )
    data = root.compute()
    return loads(data, secret=params.get("secret"), key=params.get("key"))


def reduce_filters(
    filters: Sequence[Any],
    *,
    secret: bytes | None = None,
    key: Callable[[Any], Any] | None = None,
    split_every: int = SPLIT_EVERY,
    compute: bool = True,
) -> Any:
    """Merge partial structures (objects, state bytes, or Delayed of either) as a tree.

    Runs on the current dask scheduler.  Partials of different shape, seed
    or hashing raise :class:`bloomkit.IncompatibleFiltersError`.  With
    ``compute=False`` returns a Delayed of the merged state bytes.
    """
    from dask.delayed import Delayed, delayed

    split_every = _check_split_every(split_every)
    items = list(filters)
    if not items:
        raise ValueError("reduce_filters needs at least one filter")
    leaves = [x if isinstance(x, Delayed) else delayed(x) for x in items]
    root = _tree(leaves, secret, split_every, None)
    if not compute:
        return root
    return loads(root.compute(), secret=secret, key=key)


# ---- Begin logic for the membership filter ---------------------------------------------


class _FilterRef:
    """The filter as it travels to workers: its state, loaded once per process.

    Pickles as ``(state bytes, secret, key)`` only; each worker process
    loads it on first use and every task there shares that object.
    """

    __slots__ = ("_obj", "data", "key", "secret")

    def __init__(self, data: bytes, secret: bytes | None, key: Any) -> None:
        self.data = data
        self.secret = secret
        self.key = key
        self._obj: Any = None

    def __reduce__(self) -> tuple[Any, ...]:
        return (_FilterRef, (self.data, self.secret, self.key))

    def get(self) -> Any:
        if self._obj is None:
            self._obj = loads(self.data, secret=self.secret, key=self.key)
        return self._obj


def _keep_items(part: Any, ref: _FilterRef) -> list[Any]:
    items = part if isinstance(part, list) else list(part)
    mask = ref.get().contains_many(items)
    return [x for x, keep in zip(items, mask, strict=True) if keep]


def _series_mask(col: Any, f: Any) -> Any:
    import numpy as np

    notnull = col.notna().to_numpy()
    mask = np.zeros(len(col), dtype=bool)
    if notnull.any():
        mask[notnull] = np.asarray(f.contains_many(_batch(col[notnull])), dtype=bool)
    return mask


def _keep_series(part: Any, ref: _FilterRef) -> Any:
    return part[_series_mask(part, ref.get())]


def _keep_rows(part: Any, ref: _FilterRef, on: Any) -> Any:
    return part[_series_mask(part[on], ref.get())]


def _keep_block(block: Any, ref: _FilterRef) -> Any:
    import numpy as np

    mask = np.asarray(ref.get().contains_many(_batch(block)), dtype=bool)
    return block.reshape(-1)[mask]


def _ship(ref: _FilterRef, broadcast: bool) -> Any:
    """The filter as a task argument: scattered to every worker, or one graph key."""
    from dask.delayed import delayed

    if broadcast:
        try:
            from distributed import get_client

            client = get_client()
        except (ImportError, ValueError):
            client = None
        if client is not None:
            future = client.scatter(ref, broadcast=True, hash=False)
            return delayed(future)
    return delayed(ref, pure=False)


def filter_membership(
    collection: Any,
    filt: Any,
    *,
    on: Any = None,
    secret: bytes | None = None,
    broadcast: bool = True,
) -> Any:
    """Keep the items (bag), values (Series, array) or rows (DataFrame ``on=`` a column)
    whose key ``filt`` may contain.

    Every true member is kept; a non-member survives with the filter's
    false-positive rate.  Null keys never match.  The filter is shipped once
    per worker: scattered with ``broadcast=True`` when a ``distributed``
    client is active, else one key of the graph that every task depends on.
    A keyed filter needs its ``secret=`` here (it is never serialized).
    Returns a lazy collection of the same type (arrays get unknown chunk
    sizes).
    """
    if not (hasattr(filt, "to_bytes") and hasattr(filt, "contains_many")):
        raise TypeError(f"expected a bloomkit filter, not {type(filt).__name__}")
    if getattr(filt, "keyed", False) and secret is None:
        raise TypeError("a keyed filter needs secret= (the secret is never serialized)")
    kind = _collection_kind(collection, frames=True)
    if (on is None) != (kind != "frame"):
        raise TypeError("on= names the key column of a DataFrame, and only of a DataFrame")
    shipped = _ship(_FilterRef(filt.to_bytes(), secret, getattr(filt, "key", None)), broadcast)
    if kind == "bag":
        return collection.map_partitions(_keep_items, shipped)
    if kind == "series":
        return collection.map_partitions(_keep_series, shipped, meta=collection._meta)
    if kind == "frame":
        if on not in collection.columns:
            raise KeyError(f"no column {on!r} in the DataFrame")
        return collection.map_partitions(_keep_rows, shipped, on, meta=collection._meta)
    import dask.array as da
    from dask.delayed import delayed

    keep = delayed(_keep_block, pure=True)
    pieces = [
        da.from_delayed(keep(b, shipped), shape=(math.nan,), dtype=collection.dtype)
        for b in _partitions(collection, kind)
    ]
    return da.concatenate(pieces) if pieces else collection


def semi_join(
    left: Any,
    right: Any,
    on: Any = None,
    *,
    kind: type[Any] = BloomFilter,
    capacity: int | str | None = None,
    error_rate: float = 0.01,
    **params: Any,
) -> Any:
    """Approximate semi-join: the rows of ``left`` whose key appears in ``right``.

    ``right`` is the key column (a Series, bag or array) or a DataFrame with
    column ``on``; ``left`` is a DataFrame (keyed by column ``on``), a
    Series, a bag or an array.  Builds a filter over the right keys
    (:func:`build`) and applies it to the left side
    (:func:`filter_membership`): every matching row is kept, and about
    ``error_rate`` of the others survive, so follow with an exact join when
    exactness matters; the point is to shrink the left side before the
    shuffle.
    """
    rkind = _collection_kind(right, frames=True)
    keys = right[on] if rkind == "frame" else right
    filt = build(keys, kind, capacity, error_rate, **params)
    lkind = _collection_kind(left, frames=True)
    return filter_membership(
        left, filt, on=on if lkind == "frame" else None, secret=params.get("secret")
    )
