"""A small log-structured key-value store whose reads skip data files by filter.

Writes go to an in-memory table; ``flush()`` writes it as one sorted data
file (``NNNNNN.data``: one ``key<TAB>value`` line per key, sorted) together
with its own saved Bloom filter (``NNNNNN.bkf``), as an LSM tree does per
SSTable. A read checks the memtable, then the files from newest to oldest,
and opens a data file only when that file's filter says "maybe". Values are
never lost: a filter has no false negatives, so a present key is always
found in the file that holds it.

    python examples/lsm_store.py --keys 200000 --reads 200000 --absent 0.9

prints how many data-file reads the filters avoided on a read-heavy workload
with mostly absent keys.
"""

from __future__ import annotations

import argparse
import bisect
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import bloomkit


class LSMStore:
    def __init__(
        self, directory: str | Path, memtable_limit: int = 50_000, error_rate: float = 0.01
    ) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.memtable_limit = memtable_limit
        self.error_rate = error_rate
        self.memtable: dict[str, str] = {}
        # newest last: (filter, data path, sparse index of (key, byte offset))
        self.tables: list[tuple[Any, Path, list[tuple[str, int]]]] = []
        self.file_reads = 0
        self.reads_avoided = 0
        self.false_positive_reads = 0
        for bkf in sorted(self.dir.glob("*.bkf")):
            data = bkf.with_suffix(".data")
            self.tables.append((bloomkit.load(bkf), data, self._index(data)))

    INDEX_EVERY = 64  # one sparse-index entry per 64 keys, as an SSTable index block

    @classmethod
    def _index(cls, path: Path) -> list[tuple[str, int]]:
        index = []
        offset = 0
        with path.open("rb") as fh:
            for i, line in enumerate(fh):
                if i % cls.INDEX_EVERY == 0:
                    index.append((line.split(b"\t", 1)[0].decode("utf-8"), offset))
                offset += len(line)
        return index

    def put(self, key: str, value: str) -> None:
        if "\t" in key or "\n" in key or "\n" in value:
            raise ValueError("keys may not contain tabs or newlines; values no newlines")
        self.memtable[key] = value
        if len(self.memtable) >= self.memtable_limit:
            self.flush()

    def flush(self) -> None:
        if not self.memtable:
            return
        seq = len(self.tables)
        data = self.dir / f"{seq:06d}.data"
        items = sorted(self.memtable.items())
        tmp = data.with_suffix(".data.tmp")
        tmp.write_text("".join(f"{k}\t{v}\n" for k, v in items), encoding="utf-8")
        tmp.replace(data)
        f = bloomkit.BlockedBloomFilter(len(items), self.error_rate)
        f.add_many([k for k, _ in items])
        f.save(data.with_suffix(".bkf"))
        self.tables.append((f, data, self._index(data)))
        self.memtable.clear()

    def _read_file(self, path: Path, index: list[tuple[str, int]], key: str) -> str | None:
        """Open the data file, seek to the key's index block and scan it."""
        self.file_reads += 1
        i = bisect.bisect_right(index, (key, 2**63)) - 1
        if i < 0:
            return None
        with path.open("rb") as fh:
            fh.seek(index[i][1])
            for _ in range(self.INDEX_EVERY):
                line = fh.readline()
                if not line:
                    break
                k, _, v = line.decode("utf-8").rstrip("\n").partition("\t")
                if k == key:
                    return v
                if k > key:
                    break
        return None

    def get(self, key: str) -> str | None:
        if key in self.memtable:
            return self.memtable[key]
        for f, path, index in reversed(self.tables):
            if key not in f:
                self.reads_avoided += 1
                continue
            value = self._read_file(path, index, key)
            if value is not None:
                return value
            self.false_positive_reads += 1
        return None


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--keys", type=int, default=200_000)
    ap.add_argument("--reads", type=int, default=20_000)
    ap.add_argument("--absent", type=float, default=0.9, help="share of reads for absent keys")
    ap.add_argument("--memtable", type=int, default=50_000)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    rnd = random.Random(args.seed)
    tmp = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="lsm-"))
    try:
        store = LSMStore(tmp, memtable_limit=args.memtable)
        for i in range(args.keys):
            store.put(f"user:{i}", f"value-{i}")
        store.flush()
        found = wrong = 0
        t0 = time.perf_counter()
        for _ in range(args.reads):
            if rnd.random() < args.absent:
                assert store.get(f"ghost:{rnd.randrange(10**9)}") is None
            else:
                i = rnd.randrange(args.keys)
                v = store.get(f"user:{i}")
                found += v is not None
                wrong += v != f"value-{i}"
        elapsed = time.perf_counter() - t0
        probes = store.reads_avoided + store.file_reads
        report = {
            "data_files": len(store.tables),
            "reads": args.reads,
            "present_found": found,
            "wrong_values": wrong,
            "file_reads": store.file_reads,
            "file_reads_avoided": store.reads_avoided,
            "false_positive_reads": store.false_positive_reads,
            "avoided_share": store.reads_avoided / probes if probes else 0.0,
            "reads_without_filters": probes,
            "us_per_read": elapsed / args.reads * 1e6,
        }
    finally:
        if not args.dir:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{report['data_files']} data files, {args.reads:,} reads ({args.absent:.0%} absent)")
    print(
        f"data-file reads: {report['file_reads']:,} with filters vs "
        f"{report['reads_without_filters']:,} without "
        f"({report['avoided_share']:.1%} avoided; {report['false_positive_reads']} "
        f"false-positive reads); {report['us_per_read']:.1f} us per read"
    )
    return report


if __name__ == "__main__":
    main()
