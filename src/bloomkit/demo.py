"""``bloomkit demo``: build, serialize, reload and measure a filter.

Builds a BloomFilter and a BlockedBloomFilter over 1,000,000 generated keys
at 1%, round-trips each through ``to_bytes``/``loads``, checks that no
inserted key is missing, measures the false-positive rate on 1,000,000
keys that were never added, and prints it beside the formula, with the
add and query speeds of the per-item and batch paths.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any, TextIO

from . import BlockedBloomFilter, BloomFilter, loads
from .design import blocked_false_positive_rate, false_positive_rate


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - t0


def _predicted(f: Any) -> float:
    if f.layout == "blocked":
        return blocked_false_positive_rate(f.num_blocks, f.num_hashes, len(f))
    return false_positive_rate(f.num_bits, f.num_hashes, len(f))


def run(
    n: int = 1_000_000, error_rate: float = 0.01, out: TextIO | None = None
) -> list[dict[str, Any]]:
    """Run the demo; print the table to ``out`` (stdout) and return its rows."""
    import sys

    out = out or sys.stdout
    keys = [f"user:{i:08d}@example.com" for i in range(n)]
    absent = [f"nobody:{i:08d}@example.org" for i in range(n)]
    rows: list[dict[str, Any]] = []
    for cls in (BloomFilter, BlockedBloomFilter):
        f = cls(n, error_rate)
        half = n // 2
        t0 = time.perf_counter()
        for k in keys[:half]:
            f.add(k)
        t_add = time.perf_counter() - t0
        t0 = time.perf_counter()
        f.add_many(keys[half:])
        t_batch = time.perf_counter() - t0
        data, t_dump = _timed(f.to_bytes)
        g, t_load = _timed(partial(loads, data))
        if g != f:
            raise AssertionError("serialization round trip changed the filter")
        missing = sum(1 for k in keys if k not in g)
        t0 = time.perf_counter()
        for k in absent[:half]:
            k in g  # noqa: B015 - the membership test is what is timed
        t_query = time.perf_counter() - t0
        hits, t_cq = _timed(partial(g.contains_many, absent))
        fp = sum(hits)
        rows.append(
            {
                "structure": cls.__name__,
                "keys": n,
                "size_bytes": len(data),
                "bits_per_key": f.num_bits / n,
                "k": f.num_hashes,
                "predicted_fpr": _predicted(g),
                "measured_fpr": fp / len(absent),
                "false_negatives": missing,
                "add_ns": t_add / half * 1e9,
                "add_many_ns": t_batch / (n - half) * 1e9,
                "in_ns": t_query / half * 1e9,
                "contains_many_ns": t_cq / n * 1e9,
                "dump_ms": t_dump * 1e3,
                "load_ms": t_load * 1e3,
            }
        )
    out.write(
        f"bloomkit demo: {n:,} keys, target error rate {error_rate:g}; "
        f"measured on {n:,} keys never added\n\n"
    )
    header = (
        f"{'structure':<20} {'size':>10} {'bits/key':>8} {'k':>3} {'predicted':>10} "
        f"{'measured':>10} {'false neg':>9} {'add':>8} {'add_many':>9} {'in':>8} "
        f"{'contains_many':>13}"
    )
    out.write(header + "\n" + "-" * len(header) + "\n")
    for r in rows:
        out.write(
            f"{r['structure']:<20} {r['size_bytes'] / 2**20:>7.2f}MiB {r['bits_per_key']:>8.2f} "
            f"{r['k']:>3} {r['predicted_fpr']:>10.4%} {r['measured_fpr']:>10.4%} "
            f"{r['false_negatives']:>9} {r['add_ns']:>6.0f}ns {r['add_many_ns']:>7.0f}ns "
            f"{r['in_ns']:>6.0f}ns {r['contains_many_ns']:>11.0f}ns\n"
        )
    out.write("\nper-key times; serialization round trip verified (to_bytes -> loads -> ==).\n")
    return rows
