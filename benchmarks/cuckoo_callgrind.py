"""CuckooFilter per-key instruction counts under callgrind (stable on a noisy machine).

Runs each per-key and batch operation on 10^5 int keys (a filter of capacity
117,000: 80% load at the end), so that callgrind can count the instructions
of one C entry point at a time, hashing included:

    for fn in bkcuckoo_add bkbloom_add bkcuckoo_contains bkbloom_contains \\
              bkcuckoo_contains_many bkcuckoo_remove; do
        PYTHONHASHSEED=0 PYTHONPATH=src valgrind --tool=callgrind --branch-sim=yes \\
            --collect-atstart=no --toggle-collect=$fn --callgrind-out-file=/dev/null \\
            "$(python -c 'import sys; print(sys.executable)')" \\
            benchmarks/cuckoo_callgrind.py 2>&1 | grep Collected
    done
    # numpy input: add `numpy` after the script name, toggle bkcuckoo_contains_many

"Collected : Ir Bc Bcm Bi Bim": divide Ir (instructions) and Bcm (mispredicted
conditional branches) by 10^5.  Use the interpreter binary itself, not a
pyenv shim (a shell script, which callgrind would trace instead).
"""

from __future__ import annotations

import sys

import machine
import numpy as np

from bloomkit import BlockedBloomFilter, CuckooFilter

N = 100_000


def main() -> None:
    machine.announce()  # outside the toggled C functions: not in the counts
    rng = np.random.default_rng(1)
    arr = rng.integers(0, 2**62, N, dtype=np.int64)
    keys = arr.tolist()
    cf = CuckooFilter(117_000, 0.01)
    bf = BlockedBloomFilter(117_000, 0.01)
    if sys.argv[1:] == ["numpy"]:
        cf.add_many(arr)
        cf.contains_many(arr)
        return
    add = cf.add
    for k in keys:
        add(k)
    add = bf.add
    for k in keys:
        add(k)
    _ = [k in cf for k in keys]
    _ = [k in bf for k in keys]
    cf.contains_many(keys)
    rm = cf.remove
    for k in keys:
        rm(k)


if __name__ == "__main__":
    main()
