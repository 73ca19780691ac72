"""The key domains a state records (docs/keys.md, "Key domains").

The one key encoding hashes an int in the integer domain and a str (its
UTF-8 bytes) or a bytes-like key in the byte domain, so ``5`` and ``"5"``
are different keys.  Every state written since issue #31 records which
domains its keys were ever in (header flag bits 8-11, bk_format.h
``BK_FLAG_KEYS_*``); ``obj.key_types`` reads them as a frozenset of
``"int"`` and ``"text"`` (str and bytes: one domain), or None when the state
does not record them (written before, or assembled from Redis).  The CLI
reads typed-in keys in that domain.
"""

from __future__ import annotations

from collections.abc import Iterable

INT = 1  # the masks _core takes (key_domains=): bits 8 and 9 of the flags, shifted down
TEXT = 2
FLAG_INT = 0x0100  # the flag bits as peek_header()["flags"] reports them
FLAG_TEXT = 0x0200
FLAG_RECORDED = 0x0800  # set by every constructor since the record exists
_NAMES = {"int": INT, "text": TEXT}


def parse_int(text: str) -> int:
    """An integer as a user writes it: decimal (``0123`` is 123, ``+5``,
    ``-7``, surrounding blanks and ``1_000`` as Python reads them), or with
    a ``0x``/``0o``/``0b`` prefix.  ValueError otherwise.  The one parser
    of the CLI's keys and of the Parquet probe's INT32/INT64 values."""
    body = text.strip().lstrip("+-")
    return int(text, 0 if body[:2].lower() in ("0x", "0o", "0b") else 10)


def domain_mask(key_types: Iterable[str] | None) -> int:
    """``key_types`` as the mask ``_core`` takes: -1 for None (unknown)."""
    if key_types is None:
        return -1
    if isinstance(key_types, str):
        key_types = [key_types]
    mask = 0
    for name in key_types:
        if name not in _NAMES:
            raise ValueError(f"key_types holds 'int' and/or 'text', not {name!r}")
        mask |= _NAMES[name]
    return mask


def names(mask: int) -> frozenset[str]:
    """The key types of a mask (what ``_hash_keys(..., domains=True)`` returns)."""
    return frozenset(name for name, bit in _NAMES.items() if mask & bit)


def of_flags(flags: int) -> frozenset[str] | None:
    """The key types recorded in a header's flags (None: not recorded)."""
    if not flags & FLAG_RECORDED:
        return None
    return frozenset(name for name, bit in (("int", FLAG_INT), ("text", FLAG_TEXT))
                     if flags & bit)


def of_union(flags: Iterable[int]) -> int:
    """The key domains of a union or intersection of states with these header
    flags, as the mask ``_core.set_key_domains`` takes: every side's domains,
    or -1 (unknown) when a side does not record them (what the in-memory
    union stores, py_common_state.c bkpy_state_merge_keys)."""
    mask = 0
    for f in flags:
        if not f & FLAG_RECORDED:
            return -1
        mask |= (f & (FLAG_INT | FLAG_TEXT)) >> 8
    return mask


def describe(key_types: frozenset[str] | None) -> str:
    """One phrase for ``info`` and the build summary."""
    if key_types is None:
        return "unknown (not recorded: written before bloomkit recorded key types, or from Redis)"
    if not key_types:
        return "none (no keys added)"
    if key_types == {"int"}:
        return "int"
    if key_types == {"text"}:
        return "text"
    return "mixed (int and text)"
