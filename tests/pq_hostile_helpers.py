"""Hostile Parquet files and lakes for the tests of issue #34 (R47-R55).

A Parquet footer is Thrift compact protocol; to change one field of a file
pyarrow wrote, the footer is decoded *with its types* (bloomkit's generic
``decode_struct(typed=True)``, which the footer reader does not use: it
reads footers with the schema-aware decoder), edited, and encoded again by
the encoder here: :func:`rewrite_footer`.  The hostile bytes themselves are
made by this encoder, written from the Thrift compact protocol
specification for the tests only; the tests do not re-implement a decoder.

Typed values: a struct is ``{field_id: (type_id, value)}``, a list
``(elem_type, [values])``, a map ``(key_type, value_type, [(k, v), ...])``;
integers, floats, bytes and bools as themselves.
"""

from __future__ import annotations

import os
import resource
import struct
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bloomkit
from bloomkit.parquet import thrift

T_TRUE, T_FALSE, T_I8, T_I16, T_I32, T_I64, T_DOUBLE = 1, 2, 3, 4, 5, 6, 7
T_BINARY, T_LIST, T_SET, T_MAP, T_STRUCT = 8, 9, 10, 11, 12


def varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def zz(v: int) -> bytes:
    return varint((v << 1) ^ (v >> 63) if v >= 0 else ((-v) << 1) - 1)


def _enc(t: int, v: Any) -> bytes:
    if t in (T_TRUE, T_FALSE):
        return b""
    if t == T_I8:
        return bytes([v & 0xFF])
    if t in (T_I16, T_I32, T_I64):
        return zz(v)
    if t == T_DOUBLE:
        return struct.pack("<d", v)
    if t == T_BINARY:
        return varint(len(v)) + bytes(v)
    if t in (T_LIST, T_SET):
        et, items = v
        head = bytes([(len(items) << 4) | et]) if len(items) < 15 else (
            bytes([0xF0 | et]) + varint(len(items)))
        body = b"".join(bytes([1 if x else 2]) if et in (T_TRUE, T_FALSE) else _enc(et, x)
                        for x in items)
        return head + body
    if t == T_MAP:
        kt, vt, items = v
        if not items:
            return b"\x00"
        return varint(len(items)) + bytes([(kt << 4) | vt]) + b"".join(
            _enc(kt, a) + _enc(vt, b) for a, b in items)
    if t == T_STRUCT:
        return encode_struct(v)
    raise ValueError(f"type {t}")


def encode_struct(fields: dict[int, tuple[int, Any]]) -> bytes:
    out = bytearray()
    last = 0
    for fid in sorted(fields):
        t, v = fields[fid]
        if t in (T_TRUE, T_FALSE):
            t = T_TRUE if v else T_FALSE
        if 0 < fid - last <= 15:
            out.append(((fid - last) << 4) | t)
        else:
            out.append(t)
            out += zz(fid)
        last = fid
        out += _enc(t, v)
    out.append(0)
    return bytes(out)


def decode_struct(buf: bytes) -> dict[int, tuple[int, Any]]:
    """A typed FileMetaData of an honest footer, by bloomkit's generic
    decoder (footer reading uses the schema-aware one, not this)."""
    out, _ = thrift.decode_struct(buf, typed=True)
    return out


def split(data: bytes) -> tuple[bytes, bytes]:
    """(data part, footer bytes) of a Parquet file."""
    n = int.from_bytes(data[-8:-4], "little")
    return data[:-8 - n], data[-8 - n:-8]


def join(body: bytes, footer: bytes) -> bytes:
    return body + footer + len(footer).to_bytes(4, "little") + b"PAR1"


def rewrite_footer(src: Path, dst: Path,
                   edit: Callable[[dict[int, tuple[int, Any]]], None]) -> Path:
    """Copy ``src`` to ``dst`` with its footer decoded, edited in place by
    ``edit`` (a typed FileMetaData) and encoded again."""
    body, footer = split(src.read_bytes())
    meta = decode_struct(footer)
    edit(meta)
    dst.write_bytes(join(body, encode_struct(meta)))
    return dst


def row_group(meta: dict[int, tuple[int, Any]], g: int) -> dict[int, tuple[int, Any]]:
    rg: dict[int, tuple[int, Any]] = meta[4][1][1][g]
    return rg


def chunk_meta(meta: dict[int, tuple[int, Any]], g: int, c: int) -> dict[int, tuple[int, Any]]:
    cc: dict[int, tuple[int, Any]] = row_group(meta, g)[1][1][1][c][3][1]
    return cc


def write_lake_file(path: Path, n: int = 200, row_group_size: int = 100,
                    extra: dict[str, Any] | None = None) -> Path:
    """A small pyarrow-written file: id INT64 with Bloom filters, s STRING."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols: dict[str, Any] = {"id": pa.array(range(n), pa.int64()),
                            "s": pa.array([f"s{i}" for i in range(n)])}
    cols.update(extra or {})
    pq.write_table(pa.table(cols), path, row_group_size=row_group_size,
                   bloom_filter_options={"id": True, "s": True})
    return path


def run_limited(code: str, *, as_mib: int, cpu_s: int, cwd: Path | None = None
                ) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter under RLIMIT_AS = the interpreter's
    own need after imports + ``as_mib`` MiB, and RLIMIT_CPU = ``cpu_s``
    seconds (a CPU-time bound, not wall-clock: a loaded machine does not
    make it fail).  The limits are set inside the child after bloomkit,
    pyarrow and numpy are imported, so only the work is bounded."""
    prelude = textwrap.dedent(f"""
        import resource, sys
        import bloomkit, bloomkit.parquet
        try:
            import pyarrow, pyarrow.parquet, numpy
        except ImportError:
            pass
        def _vm():
            with open('/proc/self/status') as fh:
                for line in fh:
                    if line.startswith('VmSize:'):
                        return int(line.split()[1]) * 1024
            return 0
        lim = _vm() + {as_mib} * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
        used = resource.getrusage(resource.RUSAGE_SELF).ru_utime
        resource.setrlimit(resource.RLIMIT_CPU, (int(used) + {cpu_s}, int(used) + {cpu_s} + 1))
    """)
    env = dict(os.environ)
    # the bloomkit under test (src/ with an in-place build, the installed
    # package in CI, or .ci/asan.sh's sanitized build): where it was imported from
    src = str(Path(bloomkit.__file__).resolve().parents[1])
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    env["ARROW_DEFAULT_MEMORY_POOL"] = "system"
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)],
                          capture_output=True, text=True, cwd=cwd, env=env, check=False)


__all__ = ["chunk_meta", "decode_struct", "encode_struct", "join", "resource",
           "rewrite_footer", "row_group", "run_limited", "split", "write_lake_file"]
