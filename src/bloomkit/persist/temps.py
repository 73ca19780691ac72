"""Temporary files of atomic saves: their names, liveness and cleanup.

A temporary file is named ``.<name>.<host>-<boot>-<pid>-<random>.bktmp``
(host: 6 hex digits of a hash of the host name; boot: of the kernel's boot
id where there is one, else "000000"), and its writer holds an exclusive
``flock`` on it from creation to rename (``create()``'s writer a shared
one).  A temporary is *stale* -- its writer is dead -- and removed by the
next save of the same path when all of these hold:

1. its name parses and its host is this host (a writer on another host of
   a shared file system cannot be checked: never touched);
2. its boot is not this boot (the machine restarted since), or no process
   with its pid is alive (``kill(pid, 0)``: ESRCH);
3. an exclusive non-blocking ``flock`` on it succeeds (no process holds
   it: this catches what the pid test cannot see, a writer in another pid
   namespace (a container sharing the directory and the kernel) and a
   fork that inherited a live writer's descriptor).

A live writer always fails 2 or 3, so its temporary is never removed; a
reused pid can only keep a stale temporary (until that process exits),
never delete a live one.  Names that do not parse (older bloomkit
versions wrote ``.<name>.<12 hex>.bktmp``) are reported, never removed.
``bloomkit verify`` and ``info`` list what they find (:func:`temporaries`).
"""

from __future__ import annotations

import builtins
import hashlib
import os
import re
import secrets
import socket
import sys
from typing import Any

from .kinds import PathLike

if sys.platform != "win32":
    import fcntl


TMP_SUFFIX = ".bktmp"
_TMP_RE = re.compile(r"([0-9a-f]{6})-([0-9a-f]{6})-([0-9]{1,10})-[0-9a-f]{6}\.bktmp")
_TMP_OLD_RE = re.compile(r"[0-9a-f]{12}\.bktmp")
_IDS: tuple[str, str] | None = None


def _short_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=3).hexdigest()


def host_boot() -> tuple[str, str]:
    """This machine's (host, boot) tags for temporary names."""
    global _IDS
    if _IDS is None:
        try:
            with builtins.open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
                boot = _short_hash(fh.read().strip())
        except OSError:
            boot = "000000"
        _IDS = (_short_hash(socket.gethostname()), boot)
    return _IDS


def temp_path(path: str) -> str:
    directory, base = os.path.split(os.path.abspath(path))
    host, boot = host_boot()
    name = f".{base}.{host}-{boot}-{os.getpid()}-{secrets.token_hex(3)}{TMP_SUFFIX}"
    return os.path.join(directory, name)


def create_temp(path: str, access: int) -> tuple[str, int]:
    """Create a new temporary for ``path`` (O_EXCL) and take its exclusive lock."""
    tmp = temp_path(path)
    fd = os.open(tmp, access | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    if sys.platform != "win32":
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # pragma: no cover - a fresh file nobody else has opened
            pass
    return tmp, fd


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return True  # not a writer's pid: leave it alone
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists (another user's) or cannot tell
    return True


def _temp_status(name: str, base: str) -> str | None:
    """"stale", "live", "foreign" (other host, or an older name) or None
    (not a temporary of ``base``).  "stale" still needs the lock test."""
    prefix = f".{base}."
    if not name.startswith(prefix) or not name.endswith(TMP_SUFFIX):
        return None
    rest = name[len(prefix):]
    m = _TMP_RE.fullmatch(rest)
    if m is None:
        return "foreign" if _TMP_OLD_RE.fullmatch(rest) else None
    host, boot = host_boot()
    if m.group(1) != host:
        return "foreign"
    if m.group(2) != boot or not _pid_alive(int(m.group(3))):
        return "stale"
    return "live"


def _unlock_free(tmp: str) -> bool:
    """True when no process holds a lock on ``tmp`` (tested by taking an
    exclusive one without waiting, then letting it go)."""
    if sys.platform == "win32":  # pragma: no cover - no flock: trust the pid
        return True
    try:
        fd = os.open(tmp, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    os.close(fd)  # the lock goes with the descriptor; the pid is dead anyway
    return True


def temporaries(path: PathLike) -> list[dict[str, Any]]:
    """The temporary files of ``path`` in its directory: name, bytes and
    status ("stale": its writer is dead, the next save removes it; "live": a
    save is running; "foreign": written on another host or by an older
    bloomkit, owner unknown)."""
    directory, base = os.path.split(os.path.abspath(os.fspath(path)))
    found: list[dict[str, Any]] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return found
    for entry in entries:
        status = _temp_status(entry.name, base)
        if status is None:
            continue
        if status == "stale" and not _unlock_free(entry.path):
            status = "live"
        try:
            size = entry.stat(follow_symlinks=False).st_size
        except OSError:
            continue
        found.append({"name": entry.name, "path": entry.path, "bytes": size, "status": status})
    return sorted(found, key=lambda t: t["name"])


def clean_stale_temporaries(path: str) -> None:
    """Remove the temporaries of dead writers of ``path`` (best effort)."""
    for t in temporaries(path):
        if t["status"] == "stale":
            try:
                os.unlink(t["path"])
            except OSError:
                pass
