"""De-duplicate a stream of events over a time window: "have I seen this event
id in the last `window` seconds?".

A producer emits events in real time; some are retries of an event sent a
moment ago (to drop), some repeat an id seen long ago (to let through again:
the window has passed), most are new.  The consumer keeps a
``SlidingBloomFilter`` in time mode: one batch ``contains_many`` to drop the
ids seen within the window, one ``add_many`` of the ids it lets through.
With ``--redis URL`` the same code runs on a ``RedisSlidingBloomFilter``
shared by every consumer of the stream (its window follows the Redis
server's clock, never the consumers'); without it, a local filter.  On
Redis the example creates a filter of its own (by default under a fresh name,
``bloomkit-example:event_dedup:<random>``; ``--name`` picks one) and deletes
only that filter when it ends (``--keep`` keeps it): it never deletes or
reuses a key it did not create, and an existing ``--name`` is refused.

An exact dictionary beside the filter only counts the filter's mistakes: a
retry let through (a false negative: must be 0) and a new id dropped (a
false positive: about the target rate).  Ids repeated just around the window
edge may go either way (the filter keeps a key for ``window`` seconds, then
forgets it gradually, fully by ``window * (l + k) / l``: docs/sliding.md)
and are counted apart.

    python examples/event_dedup.py --seconds 5 --window 1
    python examples/event_dedup.py --seconds 5 --window 1 --redis redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import argparse
import random
import secrets
import time
from typing import Any

import bloomkit


def make_filter(args: argparse.Namespace) -> Any:
    """The local filter, or the shared one on --redis: a new filter this
    example creates (``create`` refuses a name that exists: never deleted)."""
    # Capacity: twice the adds of a window; and a whole batch arrives within
    # one generation (window / l seconds, l <= MAX_GENERATIONS), so a
    # generation (capacity / l adds) must hold a batch, or the filter shifts
    # early and keeps keys for less than the window (it warns).
    capacity = max(args.rate * args.batch * args.window * 2,
                   args.batch * bloomkit.sliding.MAX_GENERATIONS)
    if args.redis is None:
        return bloomkit.SlidingBloomFilter(int(capacity), args.p, window=args.window)
    import redis

    from bloomkit.redis import RedisSlidingBloomFilter

    client = redis.Redis.from_url(args.redis)
    return RedisSlidingBloomFilter.create(client, args.name, int(capacity), args.p,
                                          window=args.window)


def dedup(seen: Any, ids: list[str]) -> list[str]:
    """The ids of a batch to let through: not seen within the window, first
    occurrence in the batch.  The same two calls for either filter."""
    present = seen.contains_many(ids)
    out: list[str] = []
    batch: set[str] = set()
    for event, hit in zip(ids, present, strict=True):
        if not hit and event not in batch:
            batch.add(event)
            out.append(event)
    seen.add_many(out)
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0, help="how long the stream runs")
    ap.add_argument("--window", type=float, default=1.0, help="de-duplication window (s)")
    ap.add_argument("--rate", type=float, default=20.0, help="batches a second")
    ap.add_argument("--batch", type=int, default=200, help="events a batch")
    ap.add_argument("-p", type=float, default=0.01, help="target false-positive rate")
    ap.add_argument("--redis", default=None, help="a Redis URL: share the filter there")
    ap.add_argument("--name", default=None,
                    help="the filter's name in Redis: a new name (an existing one is refused, "
                         "never deleted); default bloomkit-example:event_dedup:<random>")
    ap.add_argument("--keep", action="store_true",
                    help="keep the Redis filter this run created (default: delete it at the end)")
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args(argv)
    if args.name is None:
        args.name = f"bloomkit-example:event_dedup:{secrets.token_hex(6)}"
    rnd = random.Random(args.seed)
    seen = make_filter(args)
    try:
        return _run(args, rnd, seen)
    finally:
        if args.redis is not None and not args.keep:
            seen.delete()  # the filter this run created, and only it


def _run(args: argparse.Namespace, rnd: random.Random, seen: Any) -> dict[str, Any]:
    # the documented forget bound: (l + k) generations of window / l seconds
    forget = args.window * (seen.generations + seen.num_hashes) / seen.generations
    last_through: dict[str, float] = {}  # exact: when each id was last let through
    history: list[tuple[float, str]] = []
    counts = dict(events=0, through=0, dropped=0, missed_retries=0, new_dropped=0,
                  old_dropped=0, new=0, retries=0, old_repeats=0, old_through=0)
    next_id = 0
    end = time.time() + args.seconds
    while time.time() < end:
        now = time.time()
        recent = [e for t, e in history[-2000:] if now - t < 0.5 * args.window]
        old = [e for t, e in history[-20000:-1000] if now - t > forget + 0.5]
        ids = []
        for _ in range(args.batch):
            r = rnd.random()
            if r < 0.25 and recent:
                ids.append(rnd.choice(recent))  # a retry: must be dropped
            elif r < 0.3 and old:
                ids.append(rnd.choice(old))  # the window has passed: let it through
            else:
                next_id += 1
                ids.append(f"evt-{args.seed}-{next_id}")
        through = set(dedup(seen, ids))
        done = time.time()
        counts["events"] += len(ids)
        for event in dict.fromkeys(ids):
            last = last_through.get(event)
            if event in through:
                counts["through"] += 1
                # let through again although it was added (after `last`, the
                # start of its batch) less than the window before this batch
                # was answered (before `done`): a false negative
                if last is not None and done - last < 0.8 * args.window:
                    counts["missed_retries"] += 1
                if last is not None and now - last > forget:
                    counts["old_through"] += 1
                last_through[event] = now
                history.append((now, event))
            else:
                counts["dropped"] += 1
                if last is None:
                    counts["new_dropped"] += 1  # never let through: a false positive
                elif now - last > forget + 0.1:
                    counts["old_dropped"] += 1  # past the forget bound: a false positive
            if last is None:
                counts["new"] += 1
            elif now - last < 0.5 * args.window:
                counts["retries"] += 1
            elif now - last > forget:
                counts["old_repeats"] += 1
        time.sleep(max(0.0, 1 / args.rate - (time.time() - now)))
    result: dict[str, Any] = {
        "filter": type(seen).__name__,
        "name": args.name if args.redis is not None else None,
        "window": args.window,
        "target_fpr": args.p,
        **counts,
        "observed_fpr": counts["new_dropped"] / max(1, counts["new"]),
    }
    print(f"{result['filter']}: {counts['events']:,} events over {args.seconds:g} s, window "
          f"{args.window:g} s; {counts['through']:,} let through, {counts['dropped']:,} "
          f"dropped ({counts['retries']:,} retries); retries let through: "
          f"{counts['missed_retries']} (must be 0); new ids dropped: "
          f"{counts['new_dropped']} of {counts['new']:,} ({result['observed_fpr']:.3%}, "
          f"target {args.p:g}); ids repeated after the window let through: "
          f"{counts['old_through']} of {counts['old_repeats']}")
    return result


if __name__ == "__main__":
    main()
