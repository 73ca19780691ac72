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
footer or filter headers, then maybe truncate or extend it.
"""

from __future__ import annotations

import io
import os
import sys
import tempfile

import atheris

with atheris.instrument_imports():
    from bloomkit import FormatError, parquet
    from bloomkit.parquet.footer import CountingFile, read_footer

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


def TestOneInput(data: bytes) -> None:
    if len(data) < 2:
        return
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
