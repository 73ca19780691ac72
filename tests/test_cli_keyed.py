"""Keyed filters from the command line (issue #31 item 2; cli/keyed.py):
the secret comes from --secret-file or $BLOOMKIT_SECRET, never from an
argument; build, add, query, info, repair and merge work end to end on keyed
files of every kind and agree with Python; a missing or wrong secret is a
one-line error."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import bloomkit
from bloomkit.cli import EXIT_ABSENT, EXIT_CORRUPT, EXIT_ERROR, EXIT_OK, main
from bloomkit.cli import kinds as cli_kinds

SECRET = bytes(range(16))
OTHER = bytes(range(1, 17))


def cli(argv: list[str | Path], env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run ``main(argv)`` in this process with ``env`` over os.environ;
    (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    saved = dict(os.environ)
    os.environ.pop("BLOOMKIT_SECRET", None)
    os.environ.update(env or {})
    try:
        stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(err):
            try:
                code = main([str(a) for a in argv])
            except SystemExit as exc:
                code = int(exc.code or 0)
        stdout.flush()
        out.write(stdout.buffer.getvalue().decode())
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return code, out.getvalue(), err.getvalue()


def one_line(code: int, err: str, *needles: str) -> None:
    assert code == EXIT_ERROR, err
    assert len(err.strip().splitlines()) == 1, err
    for n in needles:
        assert n in err, err


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "keys.txt").write_text("".join(f"user{i}\n" for i in range(2000)))
    (tmp_path / "raw.key").write_bytes(SECRET)
    (tmp_path / "hex.key").write_text(SECRET.hex() + "\n")  # echo adds a newline: accepted
    (tmp_path / "other.key").write_bytes(OTHER)
    return {p.stem: p for p in tmp_path.iterdir()}


def test_build_with_a_secret_file_equals_the_python_build(files: dict[str, Path],
                                                           tmp_path: Path) -> None:
    out = tmp_path / "k.bkf"
    code, stdout, err = cli(["build", files["keys"], "-o", out, "--secret-file", files["raw"]])
    assert code == EXIT_OK, err
    assert "keyed" in stdout  # the summary line says so
    ref = bloomkit.BlockedBloomFilter(2000, 0.01, secret=SECRET)
    ref.add_many(f"user{i}" for i in range(2000))
    assert out.read_bytes() == ref.to_bytes()
    # the hex form of the same secret opens it
    code, stdout, err = cli(["query", out, "user7", "user1999", "--secret-file", files["hex"]])
    assert code == EXIT_OK, err
    assert stdout.splitlines() == ["user7\tyes", "user1999\tyes"]


def test_a_keyed_file_without_its_secret_says_how_to_pass_it(files: dict[str, Path],
                                                              tmp_path: Path) -> None:
    out = tmp_path / "k.bkf"
    assert cli(["build", files["keys"], "-o", out, "--secret-file", files["raw"], "-q"])[0] == 0
    for cmd in (["query", out, "user1"], ["info", out], ["add", out, "x"],
                ["merge", out, out, "-o", tmp_path / "m.bkf"]):
        code, _, err = cli(cmd)
        one_line(code, err, str(out), "keyed", "--secret-file", "BLOOMKIT_SECRET")
    code, _, err = cli(["query", out, "user1", "--secret-file", files["other"]])
    one_line(code, err, "wrong secret")
    code, _, err = cli(["query", out, "user1"], {"BLOOMKIT_SECRET": OTHER.hex()})
    one_line(code, err, "wrong secret")


def test_the_environment_variable_is_used_for_keyed_files_only(files: dict[str, Path],
                                                               tmp_path: Path) -> None:
    env = {"BLOOMKIT_SECRET": SECRET.hex()}
    keyed, plain = tmp_path / "k.bkf", tmp_path / "p.bkf"
    assert cli(["build", files["keys"], "-o", keyed, "--keyed", "-q"], env)[0] == EXIT_OK
    assert cli(["build", files["keys"], "-o", plain, "-q"], env)[0] == EXIT_OK
    assert bloomkit.load(keyed, secret=SECRET).keyed
    assert not bloomkit.load(plain).keyed  # an exported secret does not key a plain build
    for path in (keyed, plain):
        code, stdout, err = cli(["query", path, "user5", "user1999"], env)
        assert code == EXIT_OK, err
        assert stdout.splitlines() == ["user5\tyes", "user1999\tyes"]
    code, _, err = cli(["build", files["keys"], "-o", tmp_path / "x.bkf", "--keyed"])
    one_line(code, err, "--keyed needs a secret")
    code, _, err = cli(["query", keyed, "user5"], {"BLOOMKIT_SECRET": "not hex"})
    one_line(code, err, "BLOOMKIT_SECRET", "32 hex digits")


def test_a_secret_given_for_a_plain_file_is_refused(files: dict[str, Path],
                                                    tmp_path: Path) -> None:
    plain = tmp_path / "p.bkf"
    assert cli(["build", files["keys"], "-o", plain, "-q"])[0] == EXIT_OK
    code, _, err = cli(["query", plain, "user5", "--secret-file", files["raw"]])
    one_line(code, err, "not keyed")
    (tmp_path / "bad.key").write_bytes(b"short")
    code, _, err = cli(["build", files["keys"], "-o", tmp_path / "b.bkf",
                        "--secret-file", tmp_path / "bad.key"])
    one_line(code, err, "16 raw bytes or 32 hex digits")
    code, _, err = cli(["build", files["keys"], "-o", tmp_path / "b.bkf",
                        "--secret-file", tmp_path / "missing.key"])
    one_line(code, err, "cannot read the secret")


@pytest.mark.parametrize("kind", cli_kinds.kind_names())
def test_every_kind_builds_adds_merges_and_answers_keyed(kind: str, files: dict[str, Path],
                                                         tmp_path: Path) -> None:
    """End to end per kind, each answer checked against the same file opened
    in Python with the secret; kinds that refuse add or merge refuse them for
    their own reason, never for the secret."""
    s = ["--secret-file", files["raw"]]
    out, merged = tmp_path / "k.bkf", tmp_path / "m.bkf"
    code, _, err = cli(["build", files["keys"], "-o", out, "--kind", kind, "-q", *s])
    assert code == EXIT_OK, err
    f = bloomkit.load(out, secret=SECRET)
    assert f.keyed
    code, _, add_err = cli(["add", out, "late-key", *s])
    static = "static" in add_err
    assert code == EXIT_OK or static, add_err
    f = bloomkit.load(out, secret=SECRET)
    probes = ["user3", "user1500", "late-key", "nobody"]
    code, stdout, err = cli(["query", out, *probes, *s])
    assert code in (EXIT_OK, EXIT_ABSENT), err
    lines = [line.split("\t") for line in stdout.splitlines()]
    assert [k for k, _ in lines] == probes
    values = [int(v) if v.isdigit() else int(v == "yes") for _, v in lines]
    # the same answers as Python with the secret; inserted keys present (no false negative)
    assert values == [int(v) for v in cli_kinds.answers(f, [p.encode() for p in probes])]
    assert all(v >= 1 for v in values[:2])
    if not static:
        assert values[2] >= 1
    code, stdout, err = cli(["info", out, "--json", *s])
    assert code == EXIT_OK and '"keyed": true' in stdout, err
    code, _, err = cli(["merge", out, out, "-o", merged, "-q", *s])
    if code == EXIT_OK:
        assert bloomkit.load(merged, secret=SECRET).keyed
    else:
        assert "secret" not in err and "keyed" not in err, err


def test_the_secret_never_appears_in_the_process_list(files: dict[str, Path],
                                                      tmp_path: Path) -> None:
    """The documented invocation puts a file name, not the secret, in argv."""
    src = str(Path(bloomkit.__file__).resolve().parents[1])
    r = subprocess.run([sys.executable, "-m", "bloomkit", "build", str(files["keys"]), "-o",
                        str(tmp_path / "k.bkf"), "--secret-file", str(files["raw"]), "-q"],
                       capture_output=True, env=dict(os.environ, PYTHONPATH=src), timeout=120)
    assert r.returncode == 0, r.stderr
    assert SECRET.hex() not in " ".join(map(str, r.args))


@pytest.mark.parametrize("kind", cli_kinds.kind_names())
def test_info_no_verify_shows_a_keyed_files_parameters_without_the_secret(
        kind: str, files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "k.bkf"
    assert cli(["build", files["keys"], "-o", out, "--kind", kind, "-q",
                "--secret-file", files["raw"]])[0] == EXIT_OK
    code, stdout, err = cli(["info", out, "--no-verify", "--json"])
    assert code == EXIT_OK, err
    info = json.loads(stdout)
    assert info["kind"] == kind and info["hash"].startswith("siphash")
    assert "secret" in info and "--secret-file" in info["secret"]
    # the header's parameters, the same values as with the secret
    code, full, err = cli(["info", out, "--no-verify", "--json", "--secret-file", files["raw"]])
    assert code == EXIT_OK, err
    assert info["params"] == json.loads(full)["params"] and info["params"]
    # still validated: a header that lies is refused, exit 3
    data = bytearray(out.read_bytes())
    data[48] = 0xFF  # params_len past header_len
    out.write_bytes(bytes(data))
    code, _, err = cli(["info", out, "--no-verify"])
    assert code == EXIT_CORRUPT and len(err.strip().splitlines()) == 1, err
