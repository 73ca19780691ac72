"""A crawler frontier that remembers seen URLs without knowing how many there will be.

A breadth-first crawl of a synthetic web (every page links to a few popular
pages and a few new ones, so the URL space keeps growing) keeps its "seen"
set in a ``ScalableBloomFilter``: it starts small and appends larger links
as it fills, so the compound false-positive rate stays below the target
however far the crawl goes. A false positive here means a new URL skipped
as if already seen; the example keeps an exact set beside the filter only
to count those mistakes, and prints them beside the target.

    python examples/crawler_seen.py --pages 200000
"""

from __future__ import annotations

import argparse
import random
from collections import deque
from typing import Any

import bloomkit


def outlinks(page: int, rnd: random.Random, next_id: list[int]) -> list[str]:
    links = []
    for _ in range(rnd.randrange(3, 9)):
        if rnd.random() < 0.6:  # popular pages: heavily duplicated links
            target = int(rnd.paretovariate(1.2)) % max(1, next_id[0])
        else:  # a page nobody has linked to yet
            next_id[0] += 1
            target = next_id[0]
        links.append(f"https://site{target % 997}.example/page/{target}")
    return links


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=200_000, help="pages to crawl")
    ap.add_argument("-p", type=float, default=0.001, help="target false-positive rate")
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args(argv)
    rnd = random.Random(args.seed)
    seen = bloomkit.ScalableBloomFilter(initial_capacity=1_000, error_rate=args.p, layout="blocked")
    exact: set[str] = set()  # only to count the filter's mistakes
    start = "https://site0.example/page/0"
    frontier = deque([start])
    seen.add(start)
    exact.add(start)
    next_id = [0]
    crawled = links_seen = duplicates = wrongly_skipped = 0
    while frontier and crawled < args.pages:
        url = frontier.popleft()
        crawled += 1
        for link in outlinks(int(url.rsplit("/", 1)[1]), rnd, next_id):
            links_seen += 1
            if not seen.add(link):  # False: the filter says "seen"
                duplicates += 1
                if link not in exact:
                    wrongly_skipped += 1
                continue
            exact.add(link)
            frontier.append(link)
    new_urls = len(exact) + wrongly_skipped
    report = {
        "pages_crawled": crawled,
        "links_seen": links_seen,
        "distinct_urls": new_urls,
        "duplicates_skipped": duplicates,
        "new_urls_wrongly_skipped": wrongly_skipped,
        "measured_fpr": wrongly_skipped / new_urls,
        "target_fpr": args.p,
        "filter_links": seen.num_links,
        "filter_bytes": seen.state_nbytes,
        "bits_per_url": seen.state_nbytes * 8 / new_urls,
        "exact_set_bytes_estimate": sum(len(u) + 49 for u in exact) + len(exact) * 8,
    }
    print(
        f"crawled {crawled:,} pages, {links_seen:,} links, {new_urls:,} distinct URLs; "
        f"{duplicates:,} duplicates skipped"
    )
    print(
        f"seen-filter: {seen.num_links} links, {report['filter_bytes'] / 2**20:.2f} MiB "
        f"({report['bits_per_url']:.1f} bits/URL) vs ~"
        f"{report['exact_set_bytes_estimate'] / 2**20:.0f} MiB for an exact set of str"
    )
    print(
        f"new URLs wrongly skipped: {wrongly_skipped} ({report['measured_fpr']:.4%}, "
        f"target < {args.p:.4%})"
    )
    return report


if __name__ == "__main__":
    main()
