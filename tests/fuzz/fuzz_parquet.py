"""Fuzz target on bloomkit.parquet's footer and Bloom filter reader (#20).

    python tests/fuzz/fuzz_parquet.py CORPUS_DIR -max_total_time=30

The input is written to a temporary file and read as a Parquet file:
footer (our own Thrift compact decoder), schema, every column's filters
(row_group_filters) and a may_contain over every column.  Clean errors are
FormatError (UnsupportedFormatError included), KeyError / IndexError (a
column or row group a mutated file no longer has) and TypeError (a probe
that no longer fits a mutated column type).  Anything else, a hang or a
large allocation is a finding.

The reader is pure Python, so atheris sees its coverage; still, most random
bytes die at the magic, so an input whose second byte is odd is a recipe:
take a small valid file written by pyarrow with Bloom filters (made at
start-up; skipped without pyarrow) and overwrite up to 16 bytes of its
footer or filter headers, then maybe truncate or extend it.  Two more
recipes (issue #34): when the first byte is 2 mod 4, a footer of nested
lists and maps and long lists of cheap elements around the fuzz bytes
(the depth limit and the decoding budget, R49 and R50, must hold: a
RecursionError or MemoryError is a finding); when it is 4 or 12 mod 16, the
seed's sidecar index with its string area (column, patterns, file paths)
overwritten by the fuzz bytes and resealed: a path leaving the index's
directory is refused by the validator or by open_index (R48).
"""

from __future__ import annotations

import io
import os
import sys
import tempfile

import atheris

with atheris.instrument_imports():
    from bloomkit import FormatError, _core, parquet
    from bloomkit.parquet.footer import CountingFile, read_footer
    from bloomkit.parquet.index import ParquetIndex

CLEAN = (FormatError, KeyError, IndexError, TypeError)
PROBES = [0, 1, -1, 2**40, "k1", "", b"\x00", 1.5, float("nan")]


def _seed() -> bytes:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return b""
    t = pa.table({"k": pa.array([f"k{i}" for i in range(40)]),
                  "v": pa.array(range(40), pa.int32()),
                  "d": pa.array([i / 3 for i in range(40)])})
    buf = io.BytesIO()
    pq.write_table(t, buf, row_group_size=20, store_schema=False,
                   bloom_filter_options={"k": {"ndv": 40, "fpp": 0.1}, "v": True, "d": True})
    return buf.getvalue()


SEED = _seed()
TMP = tempfile.NamedTemporaryFile(suffix=".parquet", delete=False)
TMP.close()


def mutate_seed(data: bytes) -> bytes:
    fdp = atheris.FuzzedDataProvider(data)
    buf = bytearray(SEED)
    flen = int.from_bytes(SEED[-8:-4], "little")
    lo = max(4, len(SEED) - 8 - flen - 300)  # the footer and the filters before it
    for _ in range(fdp.ConsumeIntInRange(1, 16)):
        buf[fdp.ConsumeIntInRange(lo, len(buf) - 1)] = fdp.ConsumeIntInRange(0, 255)
    cut = fdp.ConsumeIntInRange(0, 3)
    if cut == 1:
        del buf[fdp.ConsumeIntInRange(0, len(buf) - 1):]
    elif cut == 2:
        buf += fdp.ConsumeBytes(fdp.ConsumeIntInRange(1, 64))
    return bytes(buf)


def _seed_index() -> bytes:
    if not SEED:
        return b""
    d = tempfile.mkdtemp()
    try:
        with open(os.path.join(d, "a.parquet"), "wb") as f:
            f.write(SEED)
        parquet.build_index(d, "k", output=os.path.join(d, "i.bkidx")).close()
        with open(os.path.join(d, "i.bkidx"), "rb") as f:
            return f.read()
    except ImportError:
        return b""
    finally:
        for name in os.listdir(d):
            os.unlink(os.path.join(d, name))
        os.rmdir(d)


INDEX = _seed_index()


def nested_footer(data: bytes) -> bytes:
    """A FileMetaData whose field 4 is lists and maps nested to a fuzzed
    depth around a long list of cheap elements, then the fuzz bytes."""
    fdp = atheris.FuzzedDataProvider(data)
    depth = fdp.ConsumeIntInRange(0, 200)
    n = fdp.ConsumeIntInRange(0, 50_000)
    et = fdp.ConsumeIntInRange(1, 12)
    elem = bytes([fdp.ConsumeIntInRange(0, 255)]) * fdp.ConsumeIntInRange(1, 3)
    head = bytearray(b"\x49")  # field 4, a list
    for _ in range(depth):
        head += b"\x19" if fdp.ConsumeBool() else b"\x1b\x01\x9b"  # list of 1 list / map
    count = bytearray()
    v = n
    while True:
        count.append((v & 0x7F) | (0x80 if v > 0x7F else 0))
        v >>= 7
        if not v:
            break
    return bytes(head) + bytes([0xF0 | et]) + bytes(count) + elem * n + fdp.ConsumeBytes(64)


def index_case(data: bytes) -> None:
    """The seed index with its strings overwritten by the fuzz bytes."""
    buf = bytearray(INDEX)
    files, entries = int.from_bytes(buf[68:72], "little"), int.from_bytes(buf[72:80], "little")
    strings_len = int.from_bytes(buf[96:104], "little")
    at = 128 + 64 * files + 32 * entries
    raw = data[:strings_len].ljust(strings_len, b"/")
    buf[at:at + strings_len] = raw
    buf[40:48] = _core.checksum(bytes(buf)).to_bytes(8, "little")
    for allow in (False, True):
        try:
            idx = ParquetIndex(TMP.name, verify=True, allow_outside=allow, _data=bytes(buf))
        except (FormatError, ValueError):
            continue
        _ = idx.entries, repr(idx)
        idx.close()


def TestOneInput(data: bytes) -> None:
    if len(data) < 2:
        return
    if INDEX and data[0] & 15 in (4, 12):
        index_case(data[1:])
        return
    if SEED and data[0] & 3 == 2:
        flen_body = SEED[:-8 - int.from_bytes(SEED[-8:-4], "little")]
        footer = nested_footer(data[1:])
        body = flen_body + footer + len(footer).to_bytes(4, "little") + b"PAR1"
    else:
        body = mutate_seed(data[1:]) if SEED and data[0] & 1 else data[1:]
    with open(TMP.name, "wb") as f:
        f.write(body)
    try:
        with CountingFile(TMP.name) as cf:
            footer = read_footer(cf)
        for col in footer.columns:
            for bf in parquet.row_group_filters(TMP.name, col.path):
                if bf is not None:
                    for v in PROBES:
                        try:
                            _ = v in bf
                        except TypeError:
                            pass
            try:
                parquet.may_contain(TMP.name, col.path, [PROBES[0]])
            except TypeError:
                pass
    except CLEAN:
        return


def main() -> None:
    try:
        atheris.Setup(sys.argv, TestOneInput)
        atheris.Fuzz()
    finally:
        os.unlink(TMP.name)


if __name__ == "__main__":
    main()
