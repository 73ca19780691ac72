"""The exceptions of :mod:`bloomkit.redis` (all re-exported there).

Every one derives from :class:`RedisFilterError`, itself a
:class:`bloomkit.BloomkitError`; the ones that mean "wrong value" or "not
found" also derive from the matching builtin.
"""

from __future__ import annotations

from ..errors import BloomkitError, FormatError

__all__ = [
    "CorruptStateError",
    "FilterExistsError",
    "FilterMismatchError",
    "FilterNotFoundError",
    "RedisConnectionLost",
    "RedisFilterError",
    "RedisStateError",
    "WrongTypeError",
]


class RedisFilterError(BloomkitError):
    """Base class of the errors of :mod:`bloomkit.redis`."""


class FilterNotFoundError(RedisFilterError, LookupError):
    """No filter of that name (never created, deleted, or deleted under a live handle)."""


class FilterExistsError(RedisFilterError):
    """``create`` found a filter (or another object) under that name already."""


class FilterMismatchError(RedisFilterError, ValueError):
    """The stored filter is not what the caller expects (parameters, secret, format)."""


class RedisStateError(FilterMismatchError, FormatError):
    """A filter's Redis state is damaged or foreign (issue #34 item 12): one
    family, raised before the state can answer a query wrongly.  A
    :class:`bloomkit.FormatError` too, as a damaged file is, and a
    :class:`FilterMismatchError` (what a bad meta hash raised before)."""


class CorruptStateError(RedisStateError):
    """A field of the filter's state hash does not parse or is out of its range
    (``g=abc``, ``inserted=1e30``, a counter past 2**53 where the server's Lua
    numbers stop being exact and keys would be lost)."""


class WrongTypeError(RedisStateError):
    """A key of the filter holds another Redis type (a list, a set...): the
    filter was replaced by something else (Redis said WRONGTYPE)."""


class RedisConnectionLost(RedisFilterError, ConnectionError):
    """The connection failed during an operation.

    ``confirmed`` keys were acknowledged by the server; every other key of
    the call was either fully added or not at all (each chunk is one atomic
    script call).  Adds are idempotent, so retrying the whole call is safe.
    """

    def __init__(self, message: str, confirmed: int = 0) -> None:
        super().__init__(message)
        self.confirmed = confirmed
