"""The real JVM side of tests/test_spark.py and tests/test_guava.py.

Compiles tests/jvm/BkSparkTool.java (against the installed PySpark's
spark-sketch jar) and tests/jvm/BkGuavaTool.java (against Debian's
libguava-java) with javac into a temporary directory, and runs them on key
files written here.  Without a JDK the tests skip with an install hint, except
in CI (CI=true), where they fail: CI installs Java (.ci/run) and must run them.
Also used by benchmarks/spark_agreement.py.
"""

from __future__ import annotations

import glob
import os
import shutil
import struct
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent / "jvm"
GUAVA_JAR = "/usr/share/java/guava.jar"
INSTALL_HINT = ("apt-get install default-jdk-headless libguava-java (or openjdk-17-jdk-headless), "
                "pip install '.[spark]'")


def in_ci() -> bool:
    """CI=true (or 1, yes), as tests/redis_fixtures.py reads it."""
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing(exc: Exception, what: str) -> None:
    """Skip with the install hint, or fail in CI."""
    import pytest

    if in_ci():
        pytest.fail(f"CI must run the {what} tests: {exc}")
    pytest.skip(str(exc))


class Missing(Exception):
    """A piece of the JVM side is absent; the message says what to install."""


def spark_jar() -> str:
    try:
        import pyspark
    except ImportError as exc:
        raise Missing(f"pyspark is not installed ({INSTALL_HINT})") from exc
    jars = glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "spark-sketch_*.jar"))
    if not jars:
        raise Missing("pyspark has no jars/spark-sketch_*.jar")
    return jars[0]


def need(what: str) -> str:
    exe = shutil.which(what)
    if exe is None:
        raise Missing(f"{what} not found ({INSTALL_HINT})")
    return exe


def compile_tool(name: str, classpath: str, out: Path) -> list[str]:
    """javac tests/jvm/<name>.java into out; the java command line to run it."""
    javac = need("javac")
    java = need("java")
    subprocess.run([javac, "-nowarn", "-d", str(out), "-cp", classpath, str(HERE / f"{name}.java")],
                   check=True, capture_output=True, text=True)
    main = f"org.apache.spark.util.sketch.{name}" if name == "BkSparkTool" else name
    return [java, "-Xss4m", "-cp", f"{out}{os.pathsep}{classpath}", main]


def spark_tool(out: Path) -> list[str]:
    return compile_tool("BkSparkTool", spark_jar(), out)


def guava_tool(out: Path) -> list[str]:
    if not os.path.exists(GUAVA_JAR):
        raise Missing(f"{GUAVA_JAR} not found ({INSTALL_HINT})")
    return compile_tool("BkGuavaTool", GUAVA_JAR, out)


def write_keys(path: Path, keys: Sequence[Any], kind: str) -> None:
    """The tools' key file: a big-endian count, then longs or (length, bytes)."""
    parts = [struct.pack(">i", len(keys))]
    if kind == "long":
        parts.append(struct.pack(f">{len(keys)}q", *keys))
    else:
        for k in keys:
            b = k.encode() if kind == "string" else bytes(k)
            parts.append(struct.pack(">i", len(b)))
            parts.append(b)
    path.write_bytes(b"".join(parts))


def run(cmd: list[str], *args: Any) -> None:
    r = subprocess.run([*cmd, *map(str, args)], capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[-1:])} {args[:1]} failed: {r.stderr[-2000:]}")
