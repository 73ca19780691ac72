"""'Is this username taken?' over a real SQLite database, with a Guard in front.

Creates a SQLite table of users (1,000,000 by default), builds a
BlockedBloomFilter of their names, and checks sign-up candidates (mostly
new names) two ways: a query for every candidate, and through
``bloomkit.Guard``, which answers "free" for most new names without a
query. The answers are compared one by one: the Guard is always exact.

    python examples/username_taken.py --users 1000000 --checks 100000
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import bloomkit


def make_db(path: Path, users: int) -> sqlite3.Connection:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE users (name TEXT PRIMARY KEY, joined INTEGER)")
    db.executemany("INSERT INTO users VALUES (?, ?)", ((f"user{i:07d}", i) for i in range(users)))
    db.commit()
    return db


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--users", type=int, default=1_000_000)
    ap.add_argument("--checks", type=int, default=100_000)
    ap.add_argument("--taken", type=float, default=0.05, help="share of candidates already taken")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    rnd = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="users-") as tmp:
        db = make_db(Path(tmp) / "users.db", args.users)
        t0 = time.perf_counter()
        names = bloomkit.BlockedBloomFilter(args.users, 0.01)
        names.add_many(row[0] for row in db.execute("SELECT name FROM users"))
        build_s = time.perf_counter() - t0

        def taken(name: str) -> bool:
            return db.execute("SELECT 1 FROM users WHERE name = ?", (name,)).fetchone() is not None

        guard = bloomkit.Guard(names, taken, miss=False)
        candidates = [
            f"user{rnd.randrange(args.users):07d}"
            if rnd.random() < args.taken
            else f"new{rnd.randrange(10**9):09d}"
            for _ in range(args.checks)
        ]
        t0 = time.perf_counter()
        direct = [taken(c) for c in candidates]
        direct_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        guarded = [guard(c) for c in candidates]
        guarded_s = time.perf_counter() - t0
        db.close()
    if direct != guarded:
        raise AssertionError("the Guard changed an answer")
    s = guard.stats
    report = {
        "users": args.users,
        "checks": args.checks,
        "queries_direct": args.checks,
        "queries_guarded": s.lookups_made,
        "queries_avoided": s.lookups_skipped,
        "false_positives": s.false_positives,
        "observed_fpr": s.observed_false_positive_rate,
        "us_per_check_direct": direct_s / args.checks * 1e6,
        "us_per_check_guarded": guarded_s / args.checks * 1e6,
        "filter_build_s": build_s,
        "filter_mib": names.nbytes / 2**20,
    }
    print(
        f"{args.users:,} users in SQLite; filter {report['filter_mib']:.2f} MiB built in "
        f"{build_s:.2f} s"
    )
    print(
        f"{args.checks:,} checks ({args.taken:.0%} taken): {s.lookups_made:,} queries instead "
        f"of {args.checks:,} ({s.lookups_skipped / args.checks:.1%} avoided, "
        f"{s.false_positives} false positives, observed FPR {s.observed_false_positive_rate:.3%})"
    )
    print(
        f"latency per check: {report['us_per_check_direct']:.2f} us direct, "
        f"{report['us_per_check_guarded']:.2f} us guarded"
    )
    return report


if __name__ == "__main__":
    main()
