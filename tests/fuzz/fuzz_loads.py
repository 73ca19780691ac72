"""R17: atheris fuzz target on bloomkit.loads().

    python tests/fuzz/fuzz_loads.py CORPUS_DIR -max_total_time=30

(tests/fuzz/run.sh seeds the corpus with the golden files and runs it,
under ASan + UBSan when the sanitized build of .ci/asan.sh is on
PYTHONPATH.)  The first input byte picks the options: checksum on or off
(off reaches the kind validators with random payloads), and the in-place
loader of bloomkit.open().  After a successful load the object must
answer queries, take an add, merge with itself and round-trip through
to_bytes() unchanged.  Clean errors are FormatError/ValueError/TypeError.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    import bloomkit
    from bloomkit import persist

CLEAN = (bloomkit.FormatError, ValueError, TypeError)


def exercise(obj: object) -> None:
    f = obj
    _ = 1 in f  # type: ignore[operator]
    _ = "key" in f  # type: ignore[operator]
    c = f.copy()  # type: ignore[attr-defined]
    try:
        c.add(b"fuzz")
    except bloomkit.CapacityError:
        pass
    union = getattr(c, "union", None)
    if union is not None:
        try:
            union(c)
        except bloomkit.IncompatibleFiltersError:
            pass
    data = f.to_bytes()  # type: ignore[attr-defined]
    again = bloomkit.loads(data)
    if again.to_bytes() != data or again != f:
        raise AssertionError("serialization round trip changed the object")


def TestOneInput(data: bytes) -> None:
    if not data:
        return
    mode, body = data[0], data[1:]
    try:
        if mode & 3 == 0:
            obj = bloomkit.loads(body)
        elif mode & 3 == 1:
            obj = bloomkit.loads(body, verify=False)
        else:
            header = bloomkit._core.peek_header(body)
            cls = persist._KINDS.get(header["kind"])
            if cls is None:
                return
            buf = bytearray(body)
            obj = cls._from_buffer(buf, writable=True, allow_dirty=True)
            _ = 7 in obj
            obj.add(b"x")
            obj._seal()
            obj._detach()
            return
    except CLEAN:
        return
    except ValueError:
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
