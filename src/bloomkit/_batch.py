"""The one message family of a batch method given something that is not a
batch of keys (issue #31 item 11), for the faces written in Python (Redis,
the JVM-compatible filters, the BinaryFuseFilter build).  The C batches
(py_common_batch.c, bkpy_check_keys) say the same words."""

from __future__ import annotations

from typing import Any

SINGLE_KEYS: tuple[type, ...] = (str, bytes, bytearray)


def check_keys(keys: Any, one: str = "add()/`in`",
               single: tuple[type, ...] = SINGLE_KEYS) -> None:
    """TypeError unless ``keys`` can be a batch: a single str/bytes (one key,
    not its characters) or a non-iterable (``5``, ``None``) is refused
    naming what was given and the one-key call to use instead."""
    if isinstance(keys, single):
        raise TypeError(f"expected an iterable of keys, got a single {type(keys).__name__}; "
                        f"use {one} for one key, or wrap it in a list")
    if not hasattr(keys, "__iter__") and not hasattr(keys, "__getitem__"):
        raise TypeError(f"expected an iterable of keys, got {type(keys).__name__} "
                        f"(not iterable); use {one} for one key, or wrap it in a list")
