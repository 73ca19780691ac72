"""Bloom filters and friends shared through a Redis server (plain Redis >= 6.2 or Valkey).

``pip install 'bloomkit[redis]'`` (the ``redis`` client package).  Many
processes on many machines add to and query one structure; no server module
is needed.  See docs/redis.md for the full contract.  What lives where:

========================  =========================================================
``bloom.py``              :class:`RedisBloomFilter` (classic and blocked, sharded)
``counters.py``           :class:`RedisCountingBloomFilter`, :class:`RedisCountMinSketch`
``sliding.py``            :class:`RedisSlidingBloomFilter` (the local SlidingBloomFilter's
                          age-partitioned ring, shifted by scripts on the server's clock)
``errors.py``             the exceptions, all derived from :class:`RedisFilterError`
``_scripts.py``           the Lua scripts (the unit of atomicity) and their registry
``_scripts_sliding.py``   the sliding filter's scripts (both layouts)
``_wire.py``              RESP packing, the raw reply reader, pipelined round trips,
                          connection failures mapped to :class:`RedisConnectionLost`
``_layout.py``            Redis key names, format names, meta checks, the local header
``_admin.py``             ``clear()`` and ``copy(name)`` of every structure
``_sliding_records.py``   the sliding filter's per-key records and layout 0's hints
========================  =========================================================

Every structure keeps the bytes of the local payload in a Redis string, so
``to_local()`` is a copy plus a header, and computes positions on the client
with an empty local structure of the same shape: Redis never sees the keys.

The package is named ``bloomkit.redis``; ``import redis`` in its modules is an
absolute import of the third-party client package.
"""

from __future__ import annotations

from ._layout import MAX_STRING_BYTES
from ._layout import REDIS_FORMAT as REDIS_FORMAT
from ._layout import REDIS_FORMAT_BLOCKED_V1 as REDIS_FORMAT_BLOCKED_V1
from ._wire import guard_state_errors
from .bloom import RedisBloomFilter
from .counters import RedisCountingBloomFilter, RedisCountMinSketch
from .errors import (
    CorruptStateError,
    FilterExistsError,
    FilterMismatchError,
    FilterNotFoundError,
    RedisConnectionLost,
    RedisFilterError,
    RedisStateError,
    WrongTypeError,
)
from .sliding import RedisSlidingBloomFilter

for _cls in (RedisBloomFilter, RedisCountingBloomFilter, RedisCountMinSketch,
             RedisSlidingBloomFilter):
    guard_state_errors(_cls)
del _cls

__all__ = [
    "MAX_STRING_BYTES",
    "CorruptStateError",
    "FilterExistsError",
    "FilterMismatchError",
    "FilterNotFoundError",
    "RedisBloomFilter",
    "RedisConnectionLost",
    "RedisCountMinSketch",
    "RedisCountingBloomFilter",
    "RedisFilterError",
    "RedisSlidingBloomFilter",
    "RedisStateError",
    "WrongTypeError",
]
