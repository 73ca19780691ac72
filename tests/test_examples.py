"""The worked examples of examples/, run on small data."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

import bloomkit

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bk_example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


class LsmStoreTests:
    def test_reads_avoided_and_values_exact(self, tmp_path: Path) -> None:
        lsm = _load("lsm_store")
        r = lsm.main(
            [
                "--keys",
                "20000",
                "--reads",
                "4000",
                "--memtable",
                "5000",
                "--dir",
                str(tmp_path / "db"),
            ]
        )
        assert r["data_files"] == 4
        assert r["wrong_values"] == 0
        assert r["present_found"] > 0
        assert r["avoided_share"] > 0.9  # 90% absent reads, 4 files, 1% filters
        # the store reopens from disk with its saved filters
        store = lsm.LSMStore(tmp_path / "db")
        assert store.get("user:123") == "value-123"
        assert store.get("ghost:1") is None


class UsernameTakenTests:
    def test_guard_is_exact_and_avoids_queries(self) -> None:
        r = _load("username_taken").main(["--users", "20000", "--checks", "5000"])
        assert r["queries_guarded"] + r["queries_avoided"] == r["checks"]
        assert r["queries_avoided"] / r["checks"] > 0.85
        assert r["observed_fpr"] < 0.03


class LeakedPasswordsTests:
    def test_demo_reports_size_and_fpr(self) -> None:
        r = _load("leaked_passwords").main(["demo", "-n", "20000", "--probes", "50000"])
        assert r["false_negatives"] == 0
        assert r["measured_fpr"] < 0.003
        assert r["bytes_per_password"] < 2.0
        fuse = r["fuse"]  # the static filter beside it: -p 0.001 gives 16 bits, 2^-16
        assert fuse["kind"] == "BinaryFuseFilter" and fuse["false_negatives"] == 0
        assert fuse["target_fpr"] == 2.0**-16 and fuse["false_positives"] <= 5
        same = r["bloom_same_rate"]  # a Bloom filter at 2^-16: larger (17% at this small n,
        assert same["target_fpr"] == 2.0**-16  # where the fuse sizing keeps more slack)
        assert fuse["file_bytes"] < 0.85 * same["file_bytes"]

    def test_build_and_check_cli(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        mod = _load("leaked_passwords")
        src = tmp_path / "list.txt"
        src.write_text("hunter2\npassword1\n\n5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:3\n")
        out = tmp_path / "leaked.bkf"
        mod.main(["build", str(src), "-o", str(out)])
        # the SHA-1 line above is SHA-1("password"): both forms are one key
        res = mod.main(["check", str(out), "hunter2", "password", "not-in-the-list-xyz"])
        assert res == {"hunter2": True, "password": True, "not-in-the-list-xyz": False}
        assert "POSSIBLY LEAKED" in capsys.readouterr().out
        fuse_out = tmp_path / "leaked-fuse.bkf"
        f = mod.main(["build", str(src), "-o", str(fuse_out), "--kind", "fuse"])
        assert isinstance(f, bloomkit.BinaryFuseFilter) and len(f) == 3
        res = mod.main(["check", str(fuse_out), "hunter2", "password", "not-in-the-list-xyz"])
        assert res == {"hunter2": True, "password": True, "not-in-the-list-xyz": False}


class CrawlerSeenTests:
    def test_grows_and_keeps_the_rate(self) -> None:
        r = _load("crawler_seen").main(["--pages", "20000", "-p", "0.01"])
        assert r["filter_links"] >= 3  # it grew from 1,000 without a known n
        assert r["distinct_urls"] > 20_000
        # wrongly skipped new URLs: within the R3-style bound of the target
        n = r["distinct_urls"]
        assert r["measured_fpr"] <= 1.05 * 0.01 + 5 * (0.01 / n) ** 0.5


class CdnAdmissionTests:
    def test_doorkeeper_and_tinylfu_beat_always_admit(self) -> None:
        r = _load("cdn_admission").main(
            ["--requests", "60000", "--objects", "20000", "--cache", "1000", "--window", "20000"]
        )
        always, second, tiny = r["always"], r["second_hit"], r["tinylfu"]
        assert second["writes"] < 0.5 * always["writes"]
        assert tiny["writes"] < 0.5 * always["writes"]
        assert second["hit_ratio"] > always["hit_ratio"]
        assert tiny["hit_ratio"] > always["hit_ratio"]


@pytest.mark.skipif(not hasattr(bloomkit, "SlidingBloomFilter"),
                    reason="this bloomkit has no SlidingBloomFilter")
class EventDedupTests:
    """examples/event_dedup.py: the same code path on the local filter and,
    with --redis, on a RedisSlidingBloomFilter."""

    ARGS = ("--seconds", "2", "--window", "0.4", "--batch", "100")

    @staticmethod
    def _check(r: dict[str, object]) -> None:
        assert r["missed_retries"] == 0  # no retry within the window let through
        assert r["retries"] > 100 and r["dropped"] >= r["retries"]  # type: ignore[operator]
        assert r["old_repeats"] > 0  # ids repeated after the window...
        assert r["old_through"] >= 0.9 * r["old_repeats"]  # type: ignore[operator]
        assert r["observed_fpr"] < 0.03  # ...and new ids pass, but for false positives

    def test_local(self) -> None:
        r = _load("event_dedup").main(list(self.ARGS))
        assert r["filter"] == "SlidingBloomFilter"
        self._check(r)

    def test_redis(self, tmp_path: Path) -> None:
        """The Redis run works, and it never deletes or reuses what it did not
        create: a user's ``events:seen`` (docs/redis.md's name) and any other
        key survive it byte for byte; its own filter is gone at the end."""
        from redis_fixtures import RedisServer, require_redis

        require_redis()
        import redis

        from bloomkit.redis import FilterExistsError, RedisSlidingBloomFilter

        server = RedisServer(tmp_path / "redis").start()
        url = f"redis://127.0.0.1:{server.port}/0"
        try:
            client = redis.Redis.from_url(url)
            mine = RedisSlidingBloomFilter.create(client, "events:seen", 10_000, 0.01,
                                                  window=60.0)
            mine.add_many(["kept-1", "kept-2"])
            client.set("unrelated", b"v")
            before = {k: client.dump(k) for k in client.keys("*")}
            r = _load("event_dedup").main([*self.ARGS, "--redis", url])
            assert {k: client.dump(k) for k in client.keys("*")} == before
            assert "kept-1" in mine and "kept-2" in mine
            # a name that exists is refused, and still not deleted
            with pytest.raises(FilterExistsError):
                _load("event_dedup").main([*self.ARGS, "--redis", url, "--name", "events:seen"])
            assert {k: client.dump(k) for k in client.keys("*")} == before
            # --keep leaves the run's own filter behind, under the name it reports
            kept = _load("event_dedup").main(
                ["--seconds", "0.2", "--redis", url, "--name", "ex:kept", "--keep"])
            assert kept["name"] == "ex:kept"
            RedisSlidingBloomFilter.open(client, "ex:kept")
        finally:
            server.stop()
        assert r["filter"] == "RedisSlidingBloomFilter"
        assert str(r["name"]).startswith("bloomkit-example:event_dedup:")
        self._check(r)
