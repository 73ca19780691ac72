"""The wire layer: RESP packing, the raw reply reader, pipelined round trips,
and the mapping of connection failures to :class:`RedisConnectionLost`.

Batch calls on a plain ``redis.Redis`` client bypass redis-py's command
layer: the commands of a round trip are packed by hand into one write
(:func:`_resp`, or a structure's own packing tables), the next round trip is
written before the replies of the previous one are read
(:func:`_raw_pipeline`), and the replies are parsed from the socket's bytes
by :class:`_RawReader` -- a fixed-size fast path checked by one regular
expression, and a one-by-one reader for anything else (an error, a RESP3
push).  docs/redis.md, "Throughput", has the measurements behind it.
Cluster clients go through redis-py pipelines instead.
"""

from __future__ import annotations

import functools
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any

from redis.exceptions import ConnectionError as _RedisConnectionError
from redis.exceptions import NoScriptError, ResponseError
from redis.exceptions import TimeoutError as _RedisTimeoutError

from .._batch import check_keys
from .errors import CorruptStateError, FilterNotFoundError, RedisConnectionLost, WrongTypeError

# Lua numbers are doubles: a state counter at or past 2**53 is no longer
# exact on the server, and a slice or a count computed from it is wrong.
MAX_EXACT = 2**53
_STATE_INT = re.compile(r"-?[0-9]{1,16}")


def wrap_connection_error(
    exc: Exception, what: str, confirmed: int | None = None
) -> RedisConnectionLost:
    """``confirmed`` is for adds only; None for calls that write no keys (open, to_local)."""
    if confirmed is None:
        return RedisConnectionLost(
            f"connection to Redis failed during {what} ({type(exc).__name__}: {exc}); "
            "it only reads, so nothing was changed and it can be retried"
        )
    return RedisConnectionLost(
        f"connection to Redis failed during {what} ({type(exc).__name__}: {exc}); "
        f"{confirmed} keys were confirmed; every other key was either fully added or not "
        "at all (one atomic script call per chunk), and adds are idempotent, so retrying "
        "is safe",
        confirmed,
    )


class ErrorReply:
    """An error reply (``-...``) read by :class:`_RawReader`."""

    def __init__(self, text: str) -> None:
        self.text = text


class RawReader:
    """Reads raw replies (RESP2, and the RESP3 types these commands can get)
    from a redis-py connection's socket.

    Used only for round trips whose every reply was sent by us in one packed
    write and is read here in full, so the client's parser holds no buffered
    bytes of them.  The fast path (:meth:`records`) takes n fixed-size
    replies in one piece after one regular expression; anything else (an
    error reply, a short string of a deleted key) makes it return None
    without consuming, and :meth:`reply` then reads the replies one by one,
    so the reader never waits for bytes the server will not send.
    """

    def __init__(self, conn: Any) -> None:
        self.sock = conn._sock
        self.buf = bytearray()
        self.pos = 0

    def _fill(self) -> None:
        piece = self.sock.recv(1 << 18)
        if not piece:
            raise _RedisConnectionError("connection closed by server")
        if self.pos > 1 << 16:  # records() runs with pos == 0, so its offsets hold
            del self.buf[:self.pos]
            self.pos = 0
        self.buf += piece

    def records(self, n: int, size: int, lead: bytes, pattern: re.Pattern[bytes]
                ) -> bytes | None:
        """n replies of ``size`` bytes, each starting with ``lead`` and all
        matching ``pattern`` (one reply, repeated), or None."""
        if self.pos:
            del self.buf[:self.pos]
            self.pos = 0
        need = n * size
        checked = 0
        while len(self.buf) < need:
            checked = pattern.match(self.buf, checked).end()  # type: ignore[union-attr]
            rest = len(self.buf) - checked
            if rest >= size or self.buf[checked:checked + len(lead)] != lead[:rest]:
                return None  # not one of the expected replies: read them one by one
            self._fill()
        data = bytes(self.buf[:need])
        if pattern.fullmatch(data) is None:
            return None
        self.pos = need
        return data

    def line(self) -> bytes:
        while True:
            i = self.buf.find(b"\r\n", self.pos)
            if i >= 0:
                out = bytes(self.buf[self.pos:i])
                self.pos = i + 2
                return out
            self._fill()

    def _blob(self, n: int) -> bytes:
        while len(self.buf) - self.pos < n + 2:
            self._fill()
        out = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n + 2
        return out

    def reply(self) -> Any:
        """One reply (RESP2 or the RESP3 types these commands can get): bytes,
        None, int, list or :class:`_ErrorReply`; push messages are skipped."""
        while True:
            head = self.line()
            kind, rest = head[:1], head[1:]
            if kind != b">":
                break
            for _ in range(int(rest)):  # RESP3 out-of-band push: not a reply
                self.reply()
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._blob(n)
        if kind == b":":
            return int(rest)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        if kind == b"_":
            return None
        if kind == b"-":
            return ErrorReply(rest.decode("utf-8", "replace"))
        if kind == b"!":
            return ErrorReply(self._blob(int(rest)).decode("utf-8", "replace"))
        if kind == b"+":
            return rest
        raise _RedisConnectionError(f"unparsable reply from Redis: {head[:40]!r}")


def resp_encode(command: str, args: list[Any]) -> bytes:
    """One command in RESP (bulk strings)."""
    parts = [b"*%d\r\n$%d\r\n%s\r\n" % (len(args) + 1, len(command), command.encode())]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(parts)


def _pool_connection(pool: Any) -> Any:
    """A connection from a redis-py pool (before 5.3 the command name was required)."""
    try:
        return pool.get_connection()
    except TypeError:
        return pool.get_connection("GETRANGE")


def _as_redis_error(exc: BaseException) -> Exception:
    if isinstance(exc, (_RedisConnectionError, _RedisTimeoutError)):
        return exc
    return _RedisConnectionError(f"{type(exc).__name__}: {exc}")


def map_response_error(exc: ResponseError, name: str) -> Exception:
    text = str(exc)
    if "BKGONE" in text:
        return FilterNotFoundError(
            f"Redis filter {name!r} was deleted or replaced while this handle was open; "
            "open it again"
        )
    if "BKCORRUPT" in text:
        return CorruptStateError(f"Redis filter {name!r}: {text.split('BKCORRUPT', 1)[1].strip()}")
    if "WRONGTYPE" in text:
        return WrongTypeError(
            f"Redis filter {name!r}: one of its keys holds another Redis type (Redis said: "
            f"{text}); it was replaced by something that is not this filter"
        )
    return exc


def state_int(value: Any, field: str, name: str, signed: bool = False) -> int:
    """A field of a state hash as an int, or CorruptStateError naming it: a
    decimal integer, in [0, 2**53) (signed: (-2**53, 2**53)), the range the
    server's Lua numbers hold exactly (issue #34 item 12: ``g=abc`` raised a
    bare ValueError, ``inserted=1e30`` a struct.error, ``g=2**53+1`` lost
    keys silently)."""
    text = value.decode("ascii", "replace") if isinstance(value, (bytes, bytearray)) \
        else str(value)
    if _STATE_INT.fullmatch(text) is not None:
        v = int(text)
        if (-MAX_EXACT < v if signed else 0 <= v) and v < MAX_EXACT:
            return v
    raise CorruptStateError(
        f"Redis filter {name!r}: state field {field!r} is {text[:40]!r}, not an integer in "
        f"[{'-2**53' if signed else '0'}, 2**53) (a damaged or foreign state)")


def guard_state_errors(cls: type) -> type:
    """Wrap the public methods of a Redis filter class so that a raw
    WRONGTYPE reply (a key of the filter replaced by a list, a set...) from
    any of them, however it was sent (a script, a pipeline, a command) is
    :class:`WrongTypeError`, of the one family of damaged or foreign state.
    Methods a mixin gives the class (redis/_bloom_local.py) are wrapped too."""
    def wrap(fn: Callable[..., Any], label: str) -> Callable[..., Any]:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except ResponseError as exc:
                mapped = map_response_error(exc, _name_of(args, kwargs, label))
                if mapped is exc:
                    raise
                raise mapped from exc
        return call

    own: dict[str, Any] = {}  # the class's and its mixins' methods, nearest first
    for klass in cls.__mro__[:-1]:
        for attr, value in vars(klass).items():
            own.setdefault(attr, value)
    for attr, value in own.items():
        if attr.startswith("_") and attr not in ("__contains__", "__len__", "__iter__"):
            continue
        if isinstance(value, classmethod):
            setattr(cls, attr, classmethod(wrap(value.__func__, attr)))
        elif isinstance(value, property) and value.fget is not None:
            setattr(cls, attr, property(wrap(value.fget, attr), value.fset, value.fdel,
                                        value.__doc__))
        elif callable(value) and not isinstance(value, (staticmethod, type)):
            setattr(cls, attr, wrap(value, attr))
    return cls


def _name_of(args: tuple[Any, ...], kwargs: dict[str, Any], label: str) -> str:
    """The filter's name for a message: the handle's, or open()'s argument."""
    if args and isinstance(getattr(args[0], "name", None), str):
        return str(args[0].name)
    if len(args) >= 3 and isinstance(args[2], str):
        return args[2]
    return str(kwargs.get("name", f"? ({label})"))


def chunked(keys: Iterable[object], size: int) -> Iterator[list[object]]:
    check_keys(keys, single=(str, bytes, bytearray, memoryview))
    if hasattr(keys, "tolist"):
        keys = keys.tolist()  # numpy arrays: same keys, much faster iteration
    it = iter(keys)
    while True:
        chunk = list(islice(it, size))
        if not chunk:
            return
        yield chunk


def chunked_flat(keys: Iterable[object]) -> Iterator[object]:
    for chunk in chunked(keys, 4096):
        yield from chunk


def raw_pipeline(client: Any, trips: Iterator[tuple[Any, int]],
                  send: Callable[[Any, Any, bool], None],
                  read: Callable[[Any, RawReader, Any, deque[Any]], tuple[Any, int]],
                  what: str, ahead: int) -> Iterator[Any]:
    """Run trips on one pooled connection, ``ahead`` trips ahead: trip i + 1 is
    written before the replies of trip i are read, so the server works while
    the client packs.  Yields each trip's result in order.

    ``trips`` yields (item, keys in it); ``send(conn, item, check_health)``
    writes one trip; ``read(conn, reader, item, inflight)`` reads its replies
    and returns (result, keys of trips it had to drain from ``inflight``).
    A failure raises RedisConnectionLost with the keys confirmed so far
    (calls whose ``what`` starts with "add"), and the connection is never
    reused once a reply may be left unread.
    """
    pool = client.connection_pool
    conn = _pool_connection(pool)
    reader: RawReader | None = None
    inflight: deque[tuple[Any, int]] = deque()
    confirmed = 0
    try:
        for item, n in trips:
            send(conn, item, reader is None)
            if reader is None:
                reader = RawReader(conn)
            elif conn._sock is not reader.sock:
                raise _RedisConnectionError("the connection was reset")
            inflight.append((item, n))
            if len(inflight) > ahead:
                item, n = inflight.popleft()
                result, extra = read(conn, reader, item, inflight)
                yield result
                confirmed += n + extra
        while inflight:
            assert reader is not None
            item, n = inflight.popleft()
            result, extra = read(conn, reader, item, inflight)
            yield result
            confirmed += n + extra
    except (_RedisConnectionError, _RedisTimeoutError, OSError) as exc:
        conn.disconnect()
        raise wrap_connection_error(
            _as_redis_error(exc), what, confirmed if what.startswith("add") else None
        ) from exc
    except BaseException:
        conn.disconnect()  # replies may be left unread: never reuse this socket
        raise
    finally:
        pool.release(conn)



def settle_replies(items: list[Any], res: list[Any], rerun: Callable[[Any], Any],
                    name: str) -> list[Any]:
    """The replies of a pipeline of EVALSHA calls: a NOSCRIPT one runs again
    through ``rerun(item)`` (EVAL of the body), a Redis error becomes the
    module's exception for filter ``name``, any other exception is raised."""
    out = []
    for item, r in zip(items, res, strict=True):
        if isinstance(r, NoScriptError):
            try:
                r = rerun(item)
            except ResponseError as exc:  # e.g. BKGONE on a fresh script cache
                r = exc
        if isinstance(r, ResponseError):
            raise map_response_error(r, name)
        if isinstance(r, Exception):
            raise r
        out.append(r)
    return out
