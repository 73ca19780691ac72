"""The key-domain bits of a state (docs/FORMAT.md, "Key domains"), for tests
that compare bytes with a state that does not record them: golden files
written before the bits existed, and states assembled from Redis (whose
server-side adds never see a key's type, docs/redis.md)."""

from __future__ import annotations

from typing import Any

from bloomkit import _core


def without_key_domains(state: Any) -> bytes:
    """``state`` (bytes, or an object's ``to_bytes()``) with exactly flag bits
    8-11 cleared and the checksum, which covers them, recomputed: the bytes a
    bloomkit that records no key domains writes for the same structure."""
    buf = bytearray(state if isinstance(state, (bytes, bytearray, memoryview))
                    else state.to_bytes())
    _core.set_key_domains(buf, -1)
    _core.seal(buf)
    return bytes(buf)
