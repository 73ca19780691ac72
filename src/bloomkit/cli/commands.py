"""The subcommands of the ``bloomkit`` command line (design, build, add,
query, info, verify, repair, merge, plot, demo), one ``cmd_<name>`` each,
and the file handling they share (every message names the file; the
--max-bytes limits).  parser.py wires them to their options.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import mmap
import os
import struct
import sys
from collections.abc import Iterable, Iterator
from typing import Any

from .. import _core, _descriptor, _domains, _filemerge, persist, sources
from ..errors import (
    BloomkitError,
    CapacityError,
    FileInUseError,
    IncompatibleFiltersError,
)
from ..persist import checks as persist_checks
from ..persist import kinds as persist_kinds
from ..persist import temps as persist_temps
from . import keyed
from . import kinds as cli_kinds
from .errors import (
    EXIT_ABSENT,
    EXIT_INCOMPATIBLE,
    EXIT_OK,
    CliError,
    exit_code,
    one_line,
)
from .io import Progress, check_output, chunks, key_sources
from .keytypes import KeyReader

# ---- Begin logic for the subcommands --------------------------------------


def _has_layout_versions(cls: type[Any]) -> bool:
    """Whether --layout-version applies: the kind has more than one layout
    version to write (its descriptor's layout_version parameter) and its
    constructor takes one by number (a sliding filter takes layout=)."""
    import inspect

    desc = cli_kinds.descriptor(cls)
    return (desc.layout_param == "layout_version" and desc.layout_max > 0
            and "layout_version" in inspect.signature(cls).parameters)


def _kind_class(args: argparse.Namespace) -> type[Any]:
    if getattr(args, "kind", None):
        return cli_kinds.kind_class(args.kind)
    from ..bloom import BlockedBloomFilter, BloomFilter

    return BlockedBloomFilter if args.layout == "blocked" else BloomFilter


def cmd_design(args: argparse.Namespace) -> int:
    from ..design import design

    rows: list[dict[str, Any]] = []
    for layout in ("classic", "blocked"):
        d = design(args.n, args.p, layout)
        rows.append({
            "layout": layout, "capacity": d.capacity, "error_rate": d.error_rate,
            "num_bits": d.num_bits, "num_hashes": d.num_hashes, "num_blocks": d.num_blocks,
            "bytes": d.nbytes, "bits_per_key": d.bits_per_key,
            "expected_error_rate": d.expected_error_rate,
        })
    if args.json:
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    print(f"{args.n:,} keys at p={args.p:g}")
    print(f"{'layout':8} {'m (bits)':>16} {'k':>3} {'size':>12} {'bits/key':>9} {'model FPR':>10}")
    for r in rows:
        print(f"{r['layout']:8} {r['num_bits']:>16,} {r['num_hashes']:>3} "
              f"{_human(r['bytes']):>12} {r['bits_per_key']:>9.2f} "
              f"{r['expected_error_rate']:>10.4%}")
    return EXIT_OK


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def cmd_build(args: argparse.Namespace) -> int:
    cls = _kind_class(args)
    check_output(args.output)
    try:
        srcs = sources.open_sources(args.keys, column=args.column, format=args.format,
                                    delimiter=args.delimiter, as_text=args.as_text)
        total: int | None = None
        capacity: int | None = args.capacity
        if capacity is None and cli_kinds.sized_by_keys(cls):
            total = sources.count_keys(srcs)  # free for Parquet/.npy, else a counting pass
            capacity = max(1, total)
        else:
            total = sources.free_count(srcs)
        if args.layout_version is not None and not _has_layout_versions(cls):
            raise CliError("--layout-version applies only to the blocked layout, not "
                           f"{cls.__name__}")
        secret = keyed.for_build(args)
        if cli_kinds.is_static(cls):  # hashes first, then the filter in one call
            builder = cli_kinds.StaticBuilder(cls, capacity, args.p, args.delta, args.seed,
                                              secret)
            stats = _feed_sources(builder, srcs, total, args.progress, args.output)
            with _naming(args.output):
                f = builder.build()
        else:
            f = cli_kinds.make(cls, capacity, args.p, args.delta, args.seed, secret)
            if args.layout_version is not None:
                # a blocked file to be merged with one built before layout version 1
                f = cls(capacity, f.error_rate, seed=args.seed, secret=secret,
                        layout_version=args.layout_version)
            stats = _feed_sources(f, srcs, total, args.progress, args.output)
    except ImportError as exc:  # pyarrow or numpy missing: the message says what to install
        raise CliError(str(exc)) from exc
    _save(f, args.output)
    kinds = sorted({s.describe() for s in srcs} - {"lines"})
    _report(args, f, args.output, stats.keys, "; ".join([*kinds, stats.describe()]))
    return EXIT_OK


def _feed_sources(f: Any, srcs: list[sources.Source], total: int | None,
                  progress: bool | None, path: str) -> sources.ReadStats:
    """Add the keys of every source; a full cuckoo or quotient filter stops
    with an error naming ``path``."""
    bar = Progress(total, progress, "build", sum(s.size for s in srcs))
    read = sources.ReadStats()

    def step(stats: sources.ReadStats) -> None:
        nonlocal read
        read = stats
        bar.show(stats.keys, stats.bytes)

    try:
        return sources.feed(f, srcs, step)
    except CapacityError as exc:
        raise CliError(f"{path}: full after at least {read.keys:,} keys: {one_line(exc)}; "
                       "build it with a larger --capacity") from exc
    finally:
        bar.close()


# ---- Begin logic for filter files (every message names the file) ---------


@contextlib.contextmanager
def _naming(path: str) -> Iterator[None]:
    """Re-raise an error about ``path`` as one line that starts with it (a
    checksum, truncation or "is a directory" error says which file), keeping
    its exit status."""
    try:
        yield
    except (BloomkitError, ValueError, OSError) as exc:
        text = one_line(exc)
        if not text.startswith(path):
            text = f"{path}: {text}"
        raise CliError(text, exit_code(exc)) from exc


def _open_checked(path: str, mode: str, verify: bool, max_bytes: int | None = None,
                  secret: bytes | None = None) -> Any:
    with _naming(path):
        return persist.open(path, mode, verify=verify, max_bytes=max_bytes, secret=secret)


def _load(path: str, verify: bool = True, max_bytes: int | None = None,
          secret: bytes | None = None) -> Any:
    with _naming(path):
        return persist.load(path, verify=verify, max_bytes=max_bytes, secret=secret)


def _save(f: Any, path: str) -> None:
    """Write atomically; an error names ``path``, never the temporary file."""
    try:
        persist.save(f, path)
    except OSError as exc:
        raise CliError(f"{path}: cannot write: {exc.strerror or exc}") from exc


def _file_class(path: str) -> type[Any] | None:
    """The class a filter file holds, from its header; None when the header
    cannot say (opening the file then reports why)."""
    try:
        with open(path, "rb") as fh:
            header = _core.peek_header(fh.read(64), os.fstat(fh.fileno()).st_size)
    except (BloomkitError, ValueError, OSError):
        return None
    return persist_kinds.KINDS.get(header["kind"])


@contextlib.contextmanager
def _exclusive(path: str) -> Iterator[None]:
    """Hold an exclusive flock on the file now at ``path``.  An atomic save
    replaces the inode, so after each lock we check that the locked inode is
    still the one at ``path`` (else lock the new one): two writers that load,
    add and save under it cannot lose each other's keys."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock: one writer at a time is assumed
        yield
        return
    while True:
        with _naming(path):
            fd = os.open(path, os.O_RDONLY)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                held, now = os.fstat(fd), os.stat(path)
            except BaseException:
                os.close(fd)
                raise
        if (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino):
            break
        os.close(fd)
    try:
        yield
    finally:
        os.close(fd)  # releases the lock


# ---- End logic for filter files -------------------------------------------

# ---- Begin logic for size limits (--max-bytes) -----------------------------
#
# verify, info, query and add make a full pass over the file (the checksum;
# add's close() reseals), ~1 s per GiB, holes of a sparse file included.
# Default limit 16 GiB (persist.SPARSE_MAX_BYTES: a 10^10-key filter at 1%
# is 11.2 GiB; 16 GiB took 17 s to verify); `--max-bytes 64G` raises it,
# `--max-bytes 0` lifts it (sparse files included).  query --no-verify and
# info --no-verify read only the header (and k words per key): no default
# limit.


def _max_bytes(args: argparse.Namespace, full_pass: bool = True) -> int | None:
    given = getattr(args, "max_bytes", None)
    if given is None:
        return persist.SPARSE_MAX_BYTES if full_pass else None
    return given if given > 0 else sys.maxsize  # 0: no limit, sparse files too


def _note_temporaries(path: str, command: str) -> list[dict[str, Any]]:
    """One ``note:`` line on stderr per temporary file of a save of ``path``
    found next to it (persist.temps.temporaries); returns them."""
    temps = persist_temps.temporaries(path)
    for t in temps:
        why = {"stale": "left by a killed save (its writer is dead); the next save of the "
                        "file removes it, or delete it",
               "live": "a save of the file is in progress",
               "foreign": "owner unknown (another host, or an older bloomkit); delete it if "
                          "no save is running"}[t["status"]]
        print(f"bloomkit {command}: note: {t['path']} ({t['bytes']} bytes): {why}",
              file=sys.stderr)
    return temps


# ---- End logic for size limits (--max-bytes) -------------------------------


def _feed_all(f: Any, keys: Iterable[bytes], total: int | None, progress: bool | None,
              desc: str, path: str, reader: KeyReader | None = None) -> tuple[int, int | None]:
    """Add every key (read by ``reader``, in the filter's key domain, when
    given); (keys read, keys new or None when the kind cannot tell).
    A full cuckoo or quotient filter stops with an error naming ``path``."""
    read, new = 0, 0
    new_known = True
    bar = Progress(total, progress, desc)
    try:
        for chunk in chunks(keys):
            typed: list[Any] = list(chunk) if reader is None else reader.lookups(chunk)[0]
            try:
                added = cli_kinds.feed(f, typed)
            except CapacityError as exc:
                raise CliError(f"{path}: full after at least {read:,} keys: {one_line(exc)}; "
                               "build it with a larger --capacity") from exc
            read += len(chunk)
            if added is None:
                new_known = False
            else:
                new += added
            bar.update(len(chunk))
    finally:
        bar.close()
    return read, (new if new_known else None)


def _warn_overfull(args: argparse.Namespace, path: str, f: Any) -> None:
    warning = cli_kinds.overfull(f)
    if warning is not None:
        print(f"bloomkit {args.command}: warning: {path}: {warning}", file=sys.stderr)


def _report(args: argparse.Namespace, f: Any, path: str, keys: int | None,
            read: str | None = None) -> None:
    """After writing ``path``: the overfull warning, then the summary unless -q."""
    _warn_overfull(args, path, f)
    if not args.quiet:
        print(cli_kinds.summary(f, path, os.path.getsize(path), keys, read))


def _open_writer(path: str, verify: bool, wait: float | None, max_bytes: int | None,
                 secret: bytes | None = None) -> Any:
    """Join the writers of ``path``; while another process holds the writer
    lock (one writer at a time for cuckoo, quotient, TinyLFU files) say so
    once on stderr and wait, for ever or ``--wait`` seconds."""
    with _naming(path):
        try:
            return persist.open(path, "r+", verify=verify, max_bytes=max_bytes, timeout=0,
                                secret=secret)
        except FileInUseError as exc:
            if wait == 0 or "another process holds its writer lock" not in str(exc):
                raise
        limit = "" if wait is None else f" (up to {wait:g} s)"
        print(f"bloomkit add: {path}: another process is writing it; waiting for the writer "
              f"lock{limit}", file=sys.stderr)
        return persist.open(path, "r+", verify=verify, max_bytes=max_bytes, timeout=wait,
                            secret=secret)


def cmd_add(args: argparse.Namespace) -> int:
    source = key_sources(args.keys, args.from_files)
    cls = _file_class(args.file)
    if cls is not None and cli_kinds.is_static(cls):
        raise CliError(f"{args.file}: " + cli_kinds.STATIC_NO_ADD.format(name=cls.__name__))
    secret = keyed.for_file(args, args.file)
    if cls is not None and cli_kinds.rewritten_on_add(cls):
        with _exclusive(args.file):
            f = _load(args.file, not args.no_verify, _max_bytes(args), secret)
            reader = _key_reader(args, f)
            total, added = _feed_all(f, source, None, args.progress, "add", args.file, reader)
            _save(f, args.file)
            _warn_overfull(args, args.file, f)
    else:
        f = _open_writer(args.file, not args.no_verify, args.wait, _max_bytes(args), secret)
        reader = _key_reader(args, f)
        try:
            total, added = _feed_all(f, source, None, args.progress, "add", args.file, reader)
            _warn_overfull(args, args.file, f)
        finally:
            persist.close(f)
    reader.finish()
    if args.verbose:
        new = "" if added is None else f", {added} new"
        print(f"{total} keys{new}", file=sys.stderr)
    return EXIT_OK


def _key_reader(args: argparse.Namespace, f: Any) -> KeyReader:
    """Keys read in the key domain ``f`` records (#31 item 1; cli/keytypes.py)."""
    return KeyReader(getattr(f, "key_types", None), args.as_int, args.as_text, args.command,
                     args.file)


def cmd_query(args: argparse.Namespace) -> int:
    source = key_sources(args.keys, args.from_files)
    f = _open_checked(args.file, "r", not args.no_verify, _max_bytes(args, not args.no_verify),
                      keyed.for_file(args, args.file))
    counts = cli_kinds.is_sketch(f)
    out = sys.stdout.buffer
    all_present = True
    reader = _key_reader(args, f)
    try:
        for chunk in chunks(source, 4096):
            values = reader.answers(chunk, lambda keys: cli_kinds.answers(f, keys))
            for key, value in zip(chunk, values, strict=True):
                all_present = all_present and value > 0
                if args.quiet:
                    continue
                if args.hits:
                    if value:
                        out.write(key + b"\n")
                elif args.misses:
                    if not value:
                        out.write(key + b"\n")
                elif counts:
                    out.write(b"%s\t%d\n" % (key, value))
                else:
                    out.write(key + (b"\tyes\n" if value else b"\tno\n"))
    finally:
        persist.close(f)
        out.flush()
    reader.finish()
    return EXIT_OK if all_present else EXIT_ABSENT


_INFO_ATTRS = ("layout", "layout_version", "mode", "window", "generations", "generation",
               "generation_length", "capacity", "error_rate", "num_bits", "num_hashes",
               "num_blocks", "num_buckets", "bucket_size", "fingerprint_bits", "arity",
               "segment_length", "segment_count", "array_length", "attempts", "bits_per_key",
               "q", "r", "max_load",
               "load_factor", "initial_capacity", "growth", "num_links", "width", "depth",
               "counter_bits", "conservative", "total", "num_counters", "sample_factor",
               "events", "resets", "seed", "keyed", "bits_set", "fill_ratio", "nbytes",
               "state_nbytes")
# read the whole payload: skipped by info --no-verify (header only)
_INFO_SCANS = ("bits_set", "fill_ratio", "estimated_count", "estimated_error_rate")


def _header_params(head: bytes, kind: int) -> dict[str, Any]:
    """Every header parameter of the kind, by name, read from the file's own
    header bytes as its descriptor lays them out (_core.KINDS, bk_kind.h);
    an opaque area (a cuckoo filter's stash) as hex."""
    desc = _descriptor.BY_ID.get(kind)
    out: dict[str, Any] = {}
    if desc is None:
        return out
    for name, offset, width, fmt in desc.param_layout:
        at = persist_kinds.FIXED_HEADER + offset  # params follow the fixed 64 bytes
        if at + width > len(head):
            continue  # a shorter params area than this build's (cannot pass the validator)
        value = struct.unpack_from("<" + fmt, head, at)[0]
        out[name] = value.hex() if isinstance(value, bytes) else value
    return out


def _info(path: str, f: Any, header: dict[str, Any], scan: bool = True,
          head: bytes = b"") -> dict[str, Any]:
    st = os.stat(path)
    info: dict[str, Any] = {
        "file": path,
        "kind": header["kind_name"],
        "kind_id": header["kind"],
        "format_version": f"{header['version_major']}.{header['version_minor']}",
        "file_bytes": st.st_size,
        "allocated_bytes": persist_checks.allocated(st),
        "sparse": persist_checks.is_sparse(st),
        "dirty": bool(header["flags"] & persist.FLAG_DIRTY),
        "hash": {1: "xxh3-64", 2: "siphash-2-4 (keyed)"}.get(header["hash_alg"], "unknown"),
        # the key domains the file records (#31 item 1), None when it does not
        "key_types": _key_types_of(header["flags"]),
    }
    for name in _INFO_ATTRS:
        if not scan and name in _INFO_SCANS:
            continue
        if hasattr(f, name):
            info[name] = getattr(f, name)
    if info.get("layout") != "blocked":
        info.pop("layout_version", None)  # only blocked layouts have versions
    try:
        info["count"] = len(f)
    except TypeError:
        pass
    for name, meth in (("estimated_count", "estimate_count"),
                       ("estimated_error_rate", "estimate_error_rate")):
        if not scan:
            break
        fn = getattr(f, meth, None)
        if callable(fn):
            value = float(fn())
            info[name] = value if math.isfinite(value) else None
    info["params"] = _header_params(head, header["kind"])
    return info


def cmd_info(args: argparse.Namespace) -> int:
    with _naming(args.file), open(args.file, "rb") as fh:
        first = _core.peek_header(fh.read(64), os.fstat(fh.fileno()).st_size)
    if first["kind"] == _core.KINDS["ParquetIndex"].id:  # #31 item 13: was exit 4
        from ..parquet import cli as parquet_cli

        info = parquet_cli.index_info(args.file, first, not args.no_verify,
                                      _max_bytes(args, not args.no_verify))
        with _naming(args.file), open(args.file, "rb") as fh:
            info["params"] = _header_params(fh.read(first["header_len"]), first["kind"])
        return _print_info(info, args.json)
    if args.no_verify and keyed.secret_missing(args, args.file):
        # a keyed file without its secret: its header's parameters, which
        # need no secret (#31 item 2); nothing that hashes a key is opened
        with _naming(args.file), open(args.file, "rb") as fh:
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                with memoryview(mm) as view:  # the O(1) checks, as --no-verify
                    _core.validate(view, checksum=False, deep=False)
            fh.seek(0)
            head = fh.read(first["header_len"])
        info = _info(args.file, None, first, scan=False, head=head)
        info["secret"] = "not given: the header only (" + keyed.HINT + " for the rest)"
        return _print_info(info, args.json)
    # --no-verify: the header only (an O(1) map, no pass over the payload)
    f = _open_checked(args.file, "r", not args.no_verify, _max_bytes(args, not args.no_verify),
                      keyed.for_file(args, args.file))
    try:
        # the file's own header (to_bytes() would clear DIRTY)
        with _naming(args.file), open(args.file, "rb") as fh:
            header = _core.peek_header(fh.read(64), os.fstat(fh.fileno()).st_size)
            fh.seek(0)
            head = fh.read(header["header_len"])
        info = _info(args.file, f, header, scan=not args.no_verify, head=head)
    finally:
        persist.close(f)
    temps = _note_temporaries(args.file, "info")
    if temps:
        info["temporaries"] = [{k: t[k] for k in ("name", "bytes", "status")} for t in temps]
    return _print_info(info, args.json)


def _key_types_of(flags: int) -> list[str] | None:
    types = _domains.of_flags(flags)
    return None if types is None else sorted(types)


def _print_info(info: dict[str, Any], as_json: bool) -> int:
    if as_json:
        print(json.dumps(info, indent=2))
    else:
        rows: list[tuple[str, Any]] = []
        for k, v in info.items():
            if k == "params":  # every header parameter, one line each
                rows += [(f"params.{p}", pv) for p, pv in v.items()]
            elif k == "key_types":  # "keys  int" (JSON: the list, or null)
                rows.append(("keys", _domains.describe(None if v is None else frozenset(v))))
            else:
                rows.append((k, v))
        width = max(len(k) for k, _ in rows)
        for k, v in rows:
            if isinstance(v, float):
                v = f"{v:.6g}"
            print(f"{k:<{width}}  {v}")
    return EXIT_OK


def cmd_verify(args: argparse.Namespace) -> int:
    _note_temporaries(args.file, "verify")
    with _naming(args.file):
        header = persist.verify(args.file, max_bytes=_max_bytes(args))
    if not args.quiet:
        print(f"{args.file}: ok ({header['kind_name']}, format "
              f"{header['version_major']}.{header['version_minor']}, checksum "
              f"{header['checksum']:016x})")
    return EXIT_OK


def cmd_repair(args: argparse.Namespace) -> int:
    with _naming(args.file):
        report = persist.repair(args.file, max_bytes=_max_bytes(args),
                                secret=keyed.for_file(args, args.file))
    if args.quiet:
        return EXIT_OK
    if not report["was_dirty"]:
        print(f"{args.file}: clean ({report['kind']}); nothing to repair")
    else:
        counts = ""
        if report["count_before"] is not None:
            counts = f"; count {report['count_before']} -> {report['count_after']}"
        print(f"{args.file}: repaired ({report['kind']}: marked open by a killed writer; "
              f"recounted and resealed{counts})")
    return EXIT_OK


def cmd_merge(args: argparse.Namespace) -> int:
    """Bounded memory (issue #19): Bloom files are ORed chunk by chunk into
    one output state (bloomkit/_filemerge.py); other kinds load the first
    file and merge every further one in from a read-only map."""
    check_output(args.output)
    first_cls = _file_class(args.inputs[0])
    for p in args.inputs[1:]:
        cls = _file_class(p)
        if first_cls is not None and cls is not None and cls is not first_cls:
            raise CliError(f"cannot merge {first_cls.__name__} ({args.inputs[0]}) with "
                           f"{cls.__name__} ({p}); {cli_kinds.MERGE_HINT}",
                           EXIT_INCOMPATIBLE)
    try:
        if first_cls is not None and _filemerge.merges_by_bits(first_cls):
            merged = _filemerge.merge_bits(args.inputs, args.intersection, naming=_naming,
                                           secret=keyed.for_file(args, args.inputs[0]))
        else:
            merged = _merge_loaded(args)
    except IncompatibleFiltersError as exc:
        raise CliError(f"{one_line(exc)}; {cli_kinds.MERGE_HINT}", EXIT_INCOMPATIBLE) from exc
    _save(merged, args.output)
    _report(args, merged, args.output, None)
    return EXIT_OK


def _merge_loaded(args: argparse.Namespace) -> Any:
    out = _load(args.inputs[0], secret=keyed.for_file(args, args.inputs[0]))
    if cli_kinds.is_static(type(out)):
        cli_kinds.combine_into(out, out, args.intersection)  # raises: static filters do not merge
    for p in args.inputs[1:]:
        other = _open_checked(p, "r", verify=True, secret=keyed.for_file(args, p))
        try:
            if type(other) is not type(out):
                raise CliError(f"cannot merge {type(out).__name__} ({args.inputs[0]}) with "
                               f"{type(other).__name__} ({p}); {cli_kinds.MERGE_HINT}",
                               EXIT_INCOMPATIBLE)
            out = cli_kinds.combine_into(out, other, args.intersection)
        finally:
            other.close()
    return out


def cmd_plot(args: argparse.Namespace) -> int:
    import random

    from ..bloom import BlockedBloomFilter, BloomFilter

    if args.file:
        f = persist.load(args.file)
        label = os.path.basename(args.file)
        if not hasattr(f, "num_bits"):
            raise CliError(f"plot needs a Bloom filter, not a {type(f).__name__}")
    else:
        cls = BlockedBloomFilter if args.layout == "blocked" else BloomFilter
        f = cls(args.n, args.p, seed=1)
        f.add_many(range(args.n))
        label = f"fresh {cls.__name__}, n={args.n:,}"
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise CliError("plot needs matplotlib: pip install 'bloomkit[plot]'") from None
    count = max(1, len(f))
    bits_per_key = f.num_bits / count
    rng = random.Random(12345)
    probes = [rng.getrandbits(120).to_bytes(15, "little") for _ in range(args.probes)]
    measured = sum(f.contains_many(probes)) / len(probes)

    fig, ax = plt.subplots(figsize=(7, 4.5))
    hi = max(24.0, bits_per_key * 1.2)
    xs = [0.5 + i * (hi - 0.5) / 400 for i in range(401)]
    for k in (1, 2, 3, 4, 6, 8, 11, 16):
        ax.plot(xs, [(1 - math.exp(-k / b)) ** k for b in xs], lw=1, label=f"k={k}")
    ax.plot(xs, [0.5 ** (b * math.log(2)) for b in xs], "k--", lw=1, label="optimal k")
    ax.scatter([bits_per_key], [max(measured, 1.0 / len(probes))], color="red", zorder=5,
               label=f"{label}: measured {measured:.3%} (k={f.num_hashes})")
    ax.set_yscale("log")
    ax.set_ylim(1e-6, 1)
    ax.set_xlabel("bits per key")
    ax.set_ylabel("false-positive rate")
    ax.set_title("Bloom filter false-positive rate")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    plt.close(fig)
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from ..demo import run

    rows = run(n=args.n, error_rate=args.p)
    return 0 if all(r["false_negatives"] == 0 for r in rows) else 1


# ---- End logic for the subcommands ----------------------------------------


