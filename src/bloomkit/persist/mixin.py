"""The :class:`Persistent` mixin (the file methods every structure class has)
and :func:`register_kind`, which enters a class in the kind registry.
"""

from __future__ import annotations

import os
from typing import Any, TypeVar

from .. import _core
from ..errors import FormatError
from .atomic import save
from .kinds import KINDS, PathLike
from .mapped import close, create, flush, open
from .repair import verify

_T = TypeVar("_T")


def register_kind(kind: int, cls: type[Any]) -> None:
    """Make ``loads``/``load``/``open`` return ``cls`` for states of ``kind``.

    Every bloomkit class inherits :class:`Persistent` for its file methods
    (``save``, ``open``, ``create``, ``flush``, ``close``, ``verify`` and the
    context manager): one mechanism, visible to type checkers.  A class from
    outside bloomkit that does not inherit it gets the same methods attached
    here (unless it defines them itself), so every registered structure
    offers the same file API; tests/test_persist.py checks that no bloomkit
    class relies on that fallback.
    """
    KINDS[kind] = cls
    if not issubclass(cls, Persistent):
        for name in PERSISTENT_API:
            if name not in dir(cls):
                setattr(cls, name, Persistent.__dict__[name])


class Persistent:
    """File methods shared by every bloomkit structure (a mixin, no state).

    ``save(path)``, ``Class.open(path, mode)``, ``Class.create(path, ...)``,
    ``flush()``, ``close()``, ``verify()`` and ``with f: ...`` (which closes
    a mapped object on exit).  Every bloomkit class inherits it (see
    :func:`register_kind`).

    Each subclass gets its own descriptors for its C base's public methods
    (``_core.own_methods``): CPython specialises ``f.add(k)`` only when the
    instance's type is exactly the method's class, so without them every
    call on a public class took the generic path (issue #21).
    """

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _core.own_methods(cls)

    def contains(self, key: Any) -> bool:
        """``key in f`` by name, the method the Redis classes have too (issue
        #31 item 12); TypeError for a structure that answers no membership."""
        if not hasattr(type(self), "__contains__"):
            raise TypeError(f"{type(self).__name__} answers no membership: it counts keys "
                            "(use its estimate/count methods)")
        return key in self  # type: ignore[operator]

    def save(self, path: PathLike) -> None:
        """Write the state to ``path`` atomically (see :func:`bloomkit.save`)."""
        save(self, path)

    @classmethod
    def open(
        cls: type[_T],
        path: PathLike,
        mode: str = "r",
        *,
        secret: bytes | None = None,
        key: Any = None,
        verify: bool = False,
        max_bytes: int | None = None,
        timeout: float | None = None,
    ) -> _T:
        """Memory-map a file holding this class (see :func:`bloomkit.open`)."""
        obj = open(path, mode, secret=secret, key=key, verify=verify, max_bytes=max_bytes,
                   timeout=timeout)
        if not isinstance(obj, cls):
            name = type(obj).__name__
            close(obj)
            raise FormatError(f"{os.fspath(path)} holds a {name}, not a {cls.__name__}")
        return obj

    @classmethod
    def create(
        cls: type[_T], path: PathLike, capacity: int, error_rate: float = 0.01, **params: Any
    ) -> _T:
        """A new mapped file of this class, open "r+" (see :func:`bloomkit.create`)."""
        obj: _T = create(path, capacity, error_rate, kind=cls, **params)
        return obj

    def flush(self) -> None:
        """Seal and msync a mapped object (see :func:`bloomkit.flush`)."""
        flush(self)

    def close(self) -> None:
        """Flush and unmap a mapped object (see :func:`bloomkit.close`)."""
        close(self)

    def verify(self) -> dict[str, Any]:
        """Checksum and deep validation (see :func:`bloomkit.verify`)."""
        return verify(self)

    def __enter__(self: _T) -> _T:
        return self

    def __exit__(self, *exc: object) -> None:
        close(self)


PERSISTENT_API = ("save", "open", "create", "flush", "close", "verify", "__enter__", "__exit__")
