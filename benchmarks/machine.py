"""Where a benchmark ran: CPU model, cache sizes, huge-page setting, kernel, Python, load.

Every script in benchmarks/ calls ``announce()`` first: it prints the block below and returns
the same facts as a dict, which the scripts that write JSON store under ``"machine"``.

    # machine: AMD EPYC (AuthenticAMD, family 25 model 1 stepping 1), 2 logical CPUs, VM guest
    # caches: L1d 32 KiB, L1i 32 KiB, L2 512 KiB per CPU, L3 32 MiB shared by 2 CPUs
    # huge pages (THP): enabled madvise, defrag madvise; kernel Linux 6.18.44; Python 3.11.7
    # load average at start: 0.52 0.61 0.40 (2 CPUs)

Why: most of our per-item figures depend on whether the filter fits a cache level (a 10^6-key
1% filter is 1.2 MB: inside a 2 MiB L2, outside a 512 KiB or 1 MiB one), so a figure without
its machine cannot be compared with another.  ``fits()`` says where a state of a given size
lives on this machine.

Sources, in order: /proc/cpuinfo (model, vendor, family/model/stepping, flags),
/sys/devices/system/cpu/cpu0/cache/index*/{level,type,size,shared_cpu_list} (per-core sizes),
``lscpu`` when sysfs has no cache directory (its sizes are totals over instances, divided back
to one instance here), /sys/kernel/mm/transparent_hugepage/{enabled,defrag} (the bracketed
word is the one in force).  Anything missing is reported as unknown, never an error: a
benchmark must run on any machine.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

CACHE_DIR = "sys/devices/system/cpu/cpu0/cache"
THP_DIR = "sys/kernel/mm/transparent_hugepage"
SIMD_FLAGS = ("avx2", "bmi2", "avx512f")  # the ones bloomkit's SIMD paths care about
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def parse_size(text: str) -> int | None:
    """'32K', '512 KiB', '1 MiB', '32768K' -> bytes; None if it is not a size."""
    m = re.match(r"^\s*([\d.]+)\s*([KMG]?)(?:i?B)?\b", text.strip(), re.IGNORECASE)
    if not m:
        return None
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def human(nbytes: int | float | None) -> str:
    """Bytes as the largest exact-ish binary unit: 524288 -> '512 KiB', 2097152 -> '2 MiB'."""
    if nbytes is None:
        return "unknown"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            v = nbytes / scale
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{nbytes:.0f} B"


def _cpu_count(cpu_list: str) -> int:
    """'0-1' -> 2, '0,2,4-5' -> 4."""
    n = 0
    for part in cpu_list.split(","):
        part = part.strip()
        if "-" in part:
            a, b = part.split("-", 1)
            n += int(b) - int(a) + 1
        elif part:
            n += 1
    return n


def _cpuinfo(root: Path) -> dict[str, Any]:
    text = _read(root / "proc/cpuinfo") or ""
    first: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if first:
                break  # only the first processor's block
            continue
        key, _, val = line.partition(":")
        first.setdefault(key.strip(), val.strip())
    flags = set(first.get("flags", "").split())
    out: dict[str, Any] = {
        "cpu_model": first.get("model name"),
        "vendor": first.get("vendor_id"),
        "cpu_family": first.get("cpu family"),
        "cpu_model_number": first.get("model"),
        "stepping": first.get("stepping"),
        "vm_guest": "hypervisor" in flags if flags else None,
        "simd_flags": [f for f in SIMD_FLAGS if f in flags],
    }
    if out["cpu_model"] is None:  # not x86 Linux: take what the platform says
        out["cpu_model"] = platform.processor() or platform.machine() or None
    return out


def _caches_sysfs(root: Path) -> list[dict[str, Any]]:
    caches = []
    base = root / CACHE_DIR
    for d in sorted(base.glob("index*")) if base.is_dir() else []:
        level, ctype, size = (_read(d / f) for f in ("level", "type", "size"))
        nbytes = parse_size(size) if size else None
        if level is None or nbytes is None:
            continue
        shared = _read(d / "shared_cpu_list")
        caches.append({"level": int(level), "type": ctype or "Unified", "bytes": nbytes,
                       "shared_by_cpus": _cpu_count(shared) if shared else None})
    return caches


def caches_from_lscpu(text: str) -> list[dict[str, Any]]:
    """Cache lines of ``lscpu`` output ('L2 cache:  1 MiB (2 instances)'), per instance."""
    kinds = {"L1d": (1, "Data"), "L1i": (1, "Instruction"), "L2": (2, "Unified"),
             "L3": (3, "Unified")}
    caches = []
    for line in text.splitlines():
        m = re.match(r"^\s*(L1d|L1i|L2|L3) cache:\s*(.+?)\s*(?:\((\d+) instances?\))?\s*$", line)
        if not m:
            continue
        total = parse_size(m.group(2))
        if total is None:
            continue
        instances = int(m.group(3)) if m.group(3) else 1
        level, ctype = kinds[m.group(1)]
        caches.append({"level": level, "type": ctype, "bytes": total // instances,
                       "shared_by_cpus": None, "instances": instances})
    return caches


def _lscpu() -> str:
    try:
        return subprocess.run(["lscpu"], capture_output=True, text=True, timeout=5,
                              env={**os.environ, "LC_ALL": "C"}).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def cache_name(c: dict[str, Any]) -> str:
    if c["level"] == 1:
        return {"Data": "L1d", "Instruction": "L1i"}.get(c["type"], "L1")
    return f"L{c['level']}"


def _thp(root: Path) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in ("enabled", "defrag"):
        text = _read(root / THP_DIR / name)
        m = re.search(r"\[([^\]]+)\]", text or "")
        out[name] = m.group(1) if m else text
    return out


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def describe(root: Path | str = "/", lscpu_text: str | None = None) -> dict[str, Any]:
    """The machine as a JSON-ready dict (``root`` and ``lscpu_text`` exist for the tests)."""
    root = Path(root)
    info: dict[str, Any] = _cpuinfo(root)
    info["logical_cpus"] = os.cpu_count()
    caches = _caches_sysfs(root)
    info["cache_source"] = "sysfs"
    if not caches:
        caches = caches_from_lscpu(lscpu_text if lscpu_text is not None else _lscpu())
        info["cache_source"] = "lscpu" if caches else None
    info["caches"] = caches
    info["cache_bytes"] = {cache_name(c): c["bytes"] for c in caches}
    info["thp"] = _thp(root)
    info["kernel"] = f"{platform.system()} {platform.release()}"
    info["arch"] = platform.machine()
    info["python"] = f"{platform.python_version()} ({platform.python_implementation()})"
    info["load_average"] = load_average()
    return info


def banner(info: dict[str, Any]) -> str:
    """The block every benchmark prints first (lines start with '# machine', '# caches', ...)."""
    ids = ", ".join(x for x in (
        info.get("vendor"),
        "family {} model {} stepping {}".format(info.get("cpu_family"),
                                                info.get("cpu_model_number"),
                                                info.get("stepping"))
        if info.get("cpu_family") else None) if x)
    cpu = f"{info.get('cpu_model') or 'unknown CPU'}" + (f" ({ids})" if ids else "")
    guest = {True: ", VM guest", False: ", bare metal", None: ""}[info.get("vm_guest")]
    simd = info.get("simd_flags")
    lines = [f"# machine: {cpu}, {info.get('logical_cpus')} logical CPUs{guest}"
             + (f"; {' '.join(simd)}" if simd else "")]
    parts = []
    for c in info.get("caches", []):
        shared = c.get("shared_by_cpus")
        where = ("" if shared is None else " per CPU" if shared == 1
                 else f" shared by {shared} CPUs")
        parts.append(f"{cache_name(c)} {human(c['bytes'])}{where}")
    lines.append("# caches: " + (", ".join(parts) if parts else "unknown")
                 + (" (from lscpu)" if info.get("cache_source") == "lscpu" else ""))
    thp = info.get("thp", {})
    lines.append(f"# huge pages (THP): enabled {thp.get('enabled') or 'unknown'}, defrag "
                 f"{thp.get('defrag') or 'unknown'}; kernel {info.get('kernel')}; "
                 f"Python {info.get('python')}")
    load = info.get("load_average")
    if load is not None:
        busy = load[0] > 0.5 * (info.get("logical_cpus") or 1)
        lines.append(f"# load average at start: {' '.join(f'{x:.2f}' for x in load)} "
                     f"({info.get('logical_cpus')} CPUs)"
                     + (": LOADED, absolute times are inflated; compare ratios" if busy else ""))
    return "\n".join(lines)


def fits(nbytes: float, info: dict[str, Any]) -> str:
    """Where a state of nbytes lives: 'fits L2 (2 MiB)', 'beyond L2 (512 KiB), fits L3 (32 MiB)'.

    Sizes are per instance: an L3 shared by all CPUs is one pool for every process on them."""
    sizes = info.get("cache_bytes", {})
    levels = [(name, sizes[name]) for name in ("L1d", "L2", "L3") if name in sizes]
    if not levels:
        return "cache sizes unknown"
    prev: tuple[str, int] | None = None
    for name, size in levels:
        if nbytes <= size:
            beyond = f"beyond {prev[0]} ({human(prev[1])}), " if prev and prev[0] != "L1d" else ""
            return f"{beyond}fits {name} ({human(size)})"
        prev = (name, size)
    assert prev is not None
    return f"beyond {prev[0]} ({human(prev[1])}): DRAM"


def results_dir(create: bool = True) -> Path:
    """Where a benchmark writes its results unless told (``--out``/``--json``):
    ``$BLOOMKIT_BENCH_OUT``, else ``<temp dir>/bloomkit-bench``, never the source
    tree (benchmarks/results/ holds the committed figures the docs quote: a
    run overwrites them only when asked to, ``--out benchmarks/results``)."""
    env = os.environ.get("BLOOMKIT_BENCH_OUT")
    import tempfile

    path = Path(env) if env else Path(tempfile.gettempdir()) / "bloomkit-bench"
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


PEERS_HINT = "install the peer libraries with: pip install '.[bench]' (pyproject's bench extra)"


def announce(out: Any = None) -> dict[str, Any]:
    """Print the machine block (to stdout by default) and return describe()'s dict."""
    info = describe()
    print(banner(info), file=out or sys.stdout, flush=True)
    return info


if __name__ == "__main__":
    announce()
