"""R17: atheris fuzz target on bloomkit.loads().

    python tests/fuzz/fuzz_loads.py CORPUS_DIR -max_total_time=30

(tests/fuzz/run.sh seeds the corpus with the golden files and runs it,
under ASan + UBSan when the sanitized build of .ci/asan.sh is on
PYTHONPATH.)  The first input byte picks the options: checksum on or off
(off reaches the kind validators with random payloads), and the in-place
loader of bloomkit.open().  After a successful load the object must
answer queries, take an add, merge with itself and round-trip through
to_bytes() unchanged.  Clean errors are FormatError/ValueError/TypeError.
A kind-12 state (the Parquet sidecar index, which loads() refuses) goes
through bloomkit.parquet's reader instead, and must answer candidates().

The C extension is built with gcc, so atheris gets no coverage from it and
its corpus collapses to a single unit: left alone it would mutate from
nothing and rarely get past the magic.  So an input whose second byte is
odd is a recipe instead: pick a golden file, overwrite up to 16 bytes,
truncate or extend it, and optionally recompute the checksum, so that
every kind's validator and every loaded structure see near-valid states.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import atheris

with atheris.instrument_imports():
    import bloomkit
    from bloomkit import _descriptor, persist
    from bloomkit.parquet.index import KIND_PARQUET_INDEX, ParquetIndex

CLEAN = (bloomkit.FormatError, ValueError, TypeError)

GOLDENS = [p.read_bytes() for p in
           sorted((Path(__file__).resolve().parent.parent / "format" / "golden").glob("*.bkf"))]


def mutate_golden(data: bytes) -> bytes:
    """A near-valid state: a golden file with a few bytes changed (see the docstring)."""
    fdp = atheris.FuzzedDataProvider(data)
    buf = bytearray(GOLDENS[fdp.ConsumeIntInRange(0, len(GOLDENS) - 1)])
    for _ in range(fdp.ConsumeIntInRange(0, 16)):
        buf[fdp.ConsumeIntInRange(0, len(buf) - 1)] = fdp.ConsumeIntInRange(0, 255)
    cut = fdp.ConsumeIntInRange(0, 3)
    if cut == 1:
        del buf[fdp.ConsumeIntInRange(0, len(buf) - 1):]
    elif cut == 2:
        buf += fdp.ConsumeBytes(fdp.ConsumeIntInRange(1, 64))
    if fdp.ConsumeBool() and len(buf) >= 64:
        try:
            buf[40:48] = bloomkit._core.checksum(bytes(buf)).to_bytes(8, "little")
        except CLEAN:
            pass
    return bytes(buf)


def exercise(obj: Any) -> None:
    if hasattr(type(obj), "__contains__"):
        _ = 1 in obj
        _ = "key" in obj
    c = obj.copy() if hasattr(obj, "copy") else bloomkit.loads(obj.to_bytes())
    desc = _descriptor.of(c)
    static = desc is not None and desc.static  # BinaryFuseFilter: no add, no union
    if hasattr(c, "add") and not static:
        try:
            c.add(b"fuzz")
        except bloomkit.CapacityError:
            pass
    union = getattr(c, "union", None)
    if callable(union) and not static:
        try:
            union(c)
        except (bloomkit.IncompatibleFiltersError, bloomkit.CapacityError):
            pass
    data = obj.to_bytes()
    again = bloomkit.loads(data)
    if again.to_bytes() != data:
        raise AssertionError("serialization round trip changed the object")


def fuzz_index(body: bytes, verify: bool) -> None:
    """A Parquet index in memory: open (the one validator, then the tables
    parsed in Python) and answer, or a clean error."""
    try:
        idx = ParquetIndex("<fuzz>/lake.bkidx", verify=verify, _data=body)
    except CLEAN:
        return
    try:
        idx.candidates([1, "x", b"y", 2.5, -(2**40)], check=False)
    except TypeError:  # a probe no column type of the index takes
        pass
    _ = idx.entries, repr(idx), len(idx)
    idx.close()


def TestOneInput(data: bytes) -> None:
    if not data:
        return
    mode, body = data[0], data[1:]
    if GOLDENS and len(body) >= 2 and body[0] & 1:
        body = mutate_golden(body[1:])
    if len(body) >= 14 and int.from_bytes(body[12:14], "little") == KIND_PARQUET_INDEX:
        fuzz_index(body, verify=not mode & 1)
        return
    try:
        if mode & 3 == 0:
            obj = bloomkit.loads(body)
        elif mode & 3 == 1:
            obj = bloomkit.loads(body, verify=False)
        else:
            header = bloomkit._core.peek_header(body)
            cls = persist.kinds.KINDS.get(header["kind"])
            if cls is None:
                return
            buf = bytearray(body)
            obj = cls._from_buffer(buf, writable=True, allow_dirty=True)
            try:
                if hasattr(type(obj), "__contains__"):
                    _ = 7 in obj
                desc = _descriptor.of(cls)
                if hasattr(obj, "add") and not (desc is not None and desc.static):
                    obj.add(b"x")
                obj._seal()
            except bloomkit.CapacityError:
                pass
            finally:
                obj._detach()
            return
    except CLEAN:
        return
    try:
        exercise(obj)
    except bloomkit.UncleanFileError:
        pass


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
