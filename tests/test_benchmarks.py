"""benchmarks/: every script says which machine it ran on (issue #21.4).

No timing is asserted here: the smoke run only has to print and store the machine block.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import bloomkit
import kind_list

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def _load_machine() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bk_bench_machine", BENCH / "machine.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


machine = _load_machine()

CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Processor
stepping\t: 8
flags\t\t: fpu sse2 hypervisor avx2 bmi2 avx512f

processor\t: 1
vendor_id\t: GenuineIntel
model name\t: not the first block
"""


def _fake_root(tmp: Path, with_caches: bool = True) -> Path:
    (tmp / "proc").mkdir()
    (tmp / "proc/cpuinfo").write_text(CPUINFO)
    if with_caches:
        for i, (level, ctype, size, shared) in enumerate([
            ("1", "Data", "48K", "0"), ("1", "Instruction", "32K", "0"),
            ("2", "Unified", "2048K", "0"), ("3", "Unified", "107520K", "0-1"),
        ]):
            d = tmp / machine.CACHE_DIR / f"index{i}"
            d.mkdir(parents=True)
            for name, text in (("level", level), ("type", ctype), ("size", size),
                               ("shared_cpu_list", shared)):
                (d / name).write_text(text + "\n")
    thp = tmp / machine.THP_DIR
    thp.mkdir(parents=True)
    (thp / "enabled").write_text("always [madvise] never\n")
    (thp / "defrag").write_text("always defer defer+madvise [madvise] never\n")
    return tmp


class MachineBlockTests:
    def test_sysfs_and_cpuinfo_are_read(self, tmp_path: Path) -> None:
        info = machine.describe(_fake_root(tmp_path), lscpu_text="")
        assert info["cpu_model"] == "Intel(R) Xeon(R) Processor"
        assert (info["vendor"], info["cpu_family"], info["cpu_model_number"]) == (
            "GenuineIntel", "6", "143")
        assert info["vm_guest"] is True
        assert info["simd_flags"] == ["avx2", "bmi2", "avx512f"]
        assert info["cache_bytes"] == {"L1d": 48 << 10, "L1i": 32 << 10, "L2": 2 << 20,
                                       "L3": 105 << 20}
        assert info["caches"][3]["shared_by_cpus"] == 2
        assert info["thp"] == {"enabled": "madvise", "defrag": "madvise"}
        assert info["python"].startswith(".".join(map(str, sys.version_info[:2])))
        json.dumps(info)  # stored as-is in the JSON results

    def test_banner_names_model_caches_and_huge_pages(self, tmp_path: Path) -> None:
        text = machine.banner(machine.describe(_fake_root(tmp_path), lscpu_text=""))
        lines = text.splitlines()
        assert lines[0].startswith("# machine: Intel(R) Xeon(R) Processor (GenuineIntel, "
                                   "family 6 model 143 stepping 8)")
        assert lines[1] == ("# caches: L1d 48 KiB per CPU, L1i 32 KiB per CPU, "
                            "L2 2 MiB per CPU, L3 105 MiB shared by 2 CPUs")
        assert lines[2].startswith("# huge pages (THP): enabled madvise, defrag madvise; kernel ")

    def test_lscpu_when_sysfs_has_no_caches(self, tmp_path: Path) -> None:
        lscpu = ("L1d cache:                               64 KiB (2 instances)\n"
                 "L2 cache:                                2 MiB (2 instances)\n"
                 "L3 cache:                                32 MiB (1 instance)\n")
        info = machine.describe(_fake_root(tmp_path, with_caches=False), lscpu_text=lscpu)
        assert info["cache_source"] == "lscpu"
        assert info["cache_bytes"] == {"L1d": 32 << 10, "L2": 1 << 20, "L3": 32 << 20}
        assert "(from lscpu)" in machine.banner(info)

    def test_nothing_known_is_not_an_error(self, tmp_path: Path) -> None:
        info = machine.describe(tmp_path, lscpu_text="")
        assert info["caches"] == [] and info["thp"] == {"enabled": None, "defrag": None}
        assert "# caches: unknown" in machine.banner(info)
        assert machine.fits(1e6, info) == "cache sizes unknown"

    @pytest.mark.parametrize(("nbytes", "where"), [
        (40e3, "fits L1d (48 KiB)"),
        (400e3, "fits L2 (2 MiB)"),
        (1.2e6, "fits L2 (2 MiB)"),
        (12e6, "beyond L2 (2 MiB), fits L3 (105 MiB)"),
        (120e6, "beyond L3 (105 MiB): DRAM"),
    ])
    def test_fits_says_which_cache_holds_a_state(self, tmp_path: Path, nbytes: float,
                                                 where: str) -> None:
        info = machine.describe(_fake_root(tmp_path), lscpu_text="")
        assert machine.fits(nbytes, info) == where

    def test_sizes(self) -> None:
        assert machine.parse_size("32768K") == 32 << 20
        assert machine.parse_size("1 MiB") == 1 << 20
        assert machine.parse_size("n/a") is None
        assert machine.human(1.237e6) == "1.2 MiB"


class BenchmarkScriptTests:
    def test_every_script_announces_its_machine(self) -> None:
        scripts = sorted(p for p in BENCH.glob("*.py")
                         if p.name != "machine.py" and not p.name.startswith("_"))  # helpers
        assert len(scripts) >= 10
        missing = [p.name for p in scripts if "machine.announce(" not in p.read_text()]
        assert missing == []

    def test_no_script_writes_into_the_tree_by_default(self) -> None:
        """benchmarks/results/ holds committed figures: no script's default output
        path is there (compare.py, percall.py, topk.py, cache_traces.py, scale.py
        and scale_alternate.py wrote there unless told otherwise)."""
        bad = [p.name for p in sorted(BENCH.glob("*.py"))
               if re.search(r"""/\s*["']results["']""", p.read_text())]
        assert bad == []

    def test_compare_default_out_is_outside_the_tree_and_names_the_peers_extra(
            self, tmp_path: Path) -> None:
        """`python benchmarks/compare.py` with no --out writes under
        $BLOOMKIT_BENCH_OUT, never benchmarks/results/, and a peer that is not
        installed is skipped with the way to install it."""
        results = BENCH / "results"
        before = {p.name: p.stat().st_mtime_ns for p in results.iterdir()}
        env = {k: v for k, v in os.environ.items() if k != "BLOOMKIT_BENCH_OUT"}
        env["BLOOMKIT_BENCH_OUT"] = str(tmp_path / "out")
        out = subprocess.run(
            [sys.executable, str(BENCH / "compare.py"), "--smoke",
             "--only", "bloomkit.BlockedBloomFilter", "rbloom"],
            capture_output=True, text=True, timeout=600, check=True, env=env).stdout
        assert {p.name: p.stat().st_mtime_ns for p in results.iterdir()} == before
        assert (tmp_path / "out" / "compare-smoke.json").is_file()
        assert f"wrote {tmp_path / 'out' / 'compare-smoke.json'}" in out
        if "skipped rbloom: not installed" in out:
            assert "pip install '.[bench]'" in out

    def test_compare_smoke_prints_and_stores_the_machine(self, tmp_path: Path) -> None:
        out = subprocess.run(
            [sys.executable, str(BENCH / "compare.py"), "--smoke", "--out", str(tmp_path),
             "--only", "bloomkit.BlockedBloomFilter", "bloomkit.BloomFilter"],
            capture_output=True, text=True, timeout=600, check=True).stdout
        head = out.splitlines()[:3]
        assert head[0].startswith("# machine: ")
        assert head[1].startswith("# caches: ")
        assert head[2].startswith("# huge pages (THP): enabled ")
        assert re.search(r"^filters at n = 2,000 on this machine: bloomkit\.", out, re.M)
        res = json.loads((tmp_path / "compare-smoke.json").read_text())
        m = res["machine"]
        for key in ("cpu_model", "caches", "cache_bytes", "thp", "kernel", "python",
                    "load_average", "versions"):
            assert key in m, key
        assert res["clock"] == "wall"
        if Path("/sys/devices/system/cpu/cpu0/cache").is_dir():
            assert "L2" in m["cache_bytes"]

    def test_parquet_lake_smoke_has_no_false_negative(self) -> None:
        """benchmarks/parquet_lake.py --smoke (also run by .ci/run): may_contain
        and the sidecar index against DuckDB's scan; no timing asserted."""
        pytest.importorskip("duckdb")
        pytest.importorskip("pyarrow")
        proc = subprocess.run([sys.executable, str(BENCH / "parquet_lake.py"), "--smoke"],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        res = json.loads(proc.stdout.splitlines()[-1])
        assert res["false_negatives"] == 0 and res["index_false_negatives"] == 0
        assert res["true_pairs"] > 0 and res["index_fp_within_3se"] is True
        assert res["index_bytes"] > 0 and res["index_candidate_pairs"] >= res["true_pairs"]

    def test_topk_smoke_prints_and_stores_the_machine(self, tmp_path: Path) -> None:
        """benchmarks/topk.py (#21.2): TopK, bounter and Counter, in CI's smoke run."""
        out = subprocess.run(
            [sys.executable, str(BENCH / "topk.py"), "--smoke", "--out", str(tmp_path)],
            capture_output=True, text=True, timeout=600, check=True).stdout
        assert out.splitlines()[0].startswith("# machine: ")
        assert re.search(r"^  TopK\.update\(numpy int64\) +best ", out, re.M)
        assert re.search(r"^  batch speed-up: Counter\.update\(list of int\) / TopK", out, re.M)
        res = json.loads((tmp_path / "topk-smoke.json").read_text())
        assert "cpu_model" in res["machine"] and res["events"] == 20_000
        assert res["recall"]["TopK"] == 1.0

    def test_compare_times_both_add_forms(self, tmp_path: Path) -> None:
        """Issue #21: `f.add(k)` (the form users write) next to the bound `add(k)`."""
        subprocess.run(
            [sys.executable, str(BENCH / "compare.py"), "--smoke", "--out", str(tmp_path),
             "--only", "bloomkit.BlockedBloomFilter"],
            capture_output=True, text=True, timeout=600, check=True)
        res = json.loads((tmp_path / "compare-smoke.json").read_text())
        ops = res["sizes"]["2000"]["ns_per_key"]["bloomkit.BlockedBloomFilter"]["int"]
        assert {"add_call", "add"} <= set(ops)

    def test_percall_smoke_reports_every_class_and_form(self, tmp_path: Path) -> None:
        """benchmarks/percall.py (issue #21): public class / C base per class and call form."""
        out = subprocess.run(
            [sys.executable, str(BENCH / "percall.py"), "--smoke", "--out", str(tmp_path)],
            capture_output=True, text=True, timeout=600, check=True).stdout
        assert out.splitlines()[0].startswith("# machine: ")
        res = json.loads((tmp_path / "percall-smoke.json").read_text())
        assert "cache_bytes" in res["machine"]
        rows = {(r["class"], r["call"]) for r in res["rows"] if "ratio" in r}
        # every kind, by the calls its class has (a static kind is built, never added to)
        for k in kind_list.descriptors():
            cls = getattr(bloomkit, k.name)
            want = {(k.name, "k in f")} if hasattr(cls, "__contains__") else set()
            if hasattr(cls, "add") and not k.static:
                want |= {(k.name, "f.add(k)"), (k.name, "bound add")}
            if hasattr(cls, "record"):
                want |= {(k.name, "f.record(k)"), (k.name, "bound record")}
            assert want and want <= rows, (k.name, want - rows)
        assert ("TinyLFU", "f.admit(k, k)") in rows
        assert re.search(r"^BlockedBloomFilter +f\.add\(k\) ", out, re.M)

    def test_line_probe_compiles_and_reports(self, tmp_path: Path) -> None:
        """benchmarks/line_probe.c (issue #19): the random line read limit
        that benchmarks/scale.py compares the batch query with."""
        import shutil

        cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
        if cc is None:
            pytest.skip("no C compiler")
        exe = tmp_path / "line_probe"
        subprocess.run([cc, "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(exe),
                        str(BENCH / "line_probe.c")], check=True, timeout=120)
        for mode in ("thp", "nothp"):
            out = subprocess.run([str(exe), str(4 << 20), "4096", mode], capture_output=True,
                                 text=True, timeout=120, check=True).stdout
            fields = dict(kv.split("=") for kv in out.split())
            assert int(fields["bytes"]) == 4 << 20 and fields["thp"] == str(int(mode == "thp"))
            assert float(fields["ns_per_read"]) > 0
        bad = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
        assert bad.returncode == 2 and "usage" in bad.stderr

    def test_growable_smoke_runs(self) -> None:
        """benchmarks/growable.py --smoke (issue 32 item 2): compiles the growable
        filter's core benchmark, grows a filter 100x and prints every ratio the issue
        targets beside the blocked filter's; no timing is asserted."""
        import shutil

        if (shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")) is None:
            pytest.skip("no C compiler")
        out = subprocess.run(
            [sys.executable, str(BENCH / "growable.py"), "--smoke"],
            capture_output=True, text=True, timeout=600, check=True).stdout
        assert out.splitlines()[0].startswith("# machine: ")
        for row in ("add_many (ns/key)", "contains_many absent (ns/key)",
                    "contains loop absent (ns/key)", "bits per key"):
            assert re.search(rf"^  {re.escape(row)} +[0-9.]+ +[0-9.]+ +[0-9.]+x  <= ", out, re.M)
        rate = re.search(r"false-positive rate: measured ([0-9.]+)%", out)
        assert rate is not None and float(rate.group(1)) < 1.5

    def test_sliding_smoke_runs(self) -> None:
        """benchmarks/sliding.py --smoke: the stream, the rings and the peers
        (when installed) print; no timing is taken or asserted."""
        out = subprocess.run(
            [sys.executable, str(BENCH / "sliding.py"), "--smoke"],
            capture_output=True, text=True, timeout=900, check=True).stdout
        assert out.splitlines()[0].startswith("# machine: ")
        assert re.search(r"false negatives in the window 0,", out)
        assert "naive ring of 4 Bloom filters" in out

