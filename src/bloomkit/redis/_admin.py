"""``clear()`` and ``copy(name)`` of the Redis structures (issue #31 item 12:
the local and Redis classes offer the same set-like names).

clear: one script per state string empties it and resets its state hash to
what ``create`` wrote (the local ``clear``), after the same O(1) check as
every script (the ``gen`` of this creation and the exact length: a filter
deleted or re-created under the handle is ``FilterNotFoundError``, never
re-grown).  The sliding filter's reset also restarts a time window at the
server's ``TIME`` (the local ``clear`` restarts it at its clock's now).

copy: ONE script copies every key of the structure (meta, state strings,
state hashes) with Redis ``COPY`` (>= 6.2, the module's minimum) to the
new name and gives the copy a new creation id, so the copy is the state of
one instant: no add can land between two of its keys, and handles of the
source never write the copy (their ``gen`` differs).  A destination that
exists is refused (``FilterExistsError``) unless ``replace=True``, which
first deletes every key of the structure stored there (of any kind, read
from its meta).  Redis Cluster is refused: the new name's keys hash to
other slots than the source's, and one script cannot span slots, so the
copy could not be atomic (``to_local()`` then ``merge_from`` into a new
filter is the non-atomic way).  ``copy.copy(handle)`` is a TypeError: the
local ``copy()`` is an independent filter, and a Redis one needs a name.
"""

from __future__ import annotations

import secrets as _secrets
from typing import Any

from redis.exceptions import ConnectionError as _RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as _RedisTimeoutError

from ._layout import as_text, check_name, is_cluster, meta_key_of, shard_key_names
from ._scripts import SCRIPTS, Script
from ._wire import map_response_error, wrap_connection_error
from .errors import FilterExistsError, RedisFilterError

# ---- Begin Lua scripts --------------------------------------------------------

# clear: KEYS[1] = the state string, KEYS[2] = the state hash; ARGV[1] = gen,
# ARGV[2] = the string's length, ARGV[3] = 't' or '': with 't' the '@now'
# in the values below is the server's TIME in microseconds (the sliding
# filter's time mode: '@now' alone, '0 @now' in a birth record), else 0;
# ARGV[4] = a field to increment by 1 ('': none; the sliding filter's
# 'clears'), ARGV[5..] = field, value pairs the hash is reset to.  Nothing is
# written before the check passed.
_LUA_CLEAR_STATE = """
if redis.replicate_commands then redis.replicate_commands() end
if redis.call('HGET', KEYS[2], 'gen') ~= ARGV[1]
   or redis.call('STRLEN', KEYS[1]) ~= tonumber(ARGV[2]) then
  return redis.error_reply('BKGONE bloomkit structure was deleted or replaced')
end
local now = '0'
if ARGV[3] == 't' then
  local t = redis.call('TIME')
  now = string.format('%d', tonumber(t[1]) * 1000000 + tonumber(t[2]))
end
local args = {}
for i = 5, #ARGV do args[#args + 1] = (string.gsub(ARGV[i], '@now', now)) end
if ARGV[4] ~= '' then redis.call('HINCRBY', KEYS[2], ARGV[4], 1) end
redis.call('DEL', KEYS[1])
redis.call('SETRANGE', KEYS[1], tonumber(ARGV[2]) - 1, '\\0')
if #args > 0 then redis.call('HSET', KEYS[2], unpack(args)) end
return now
"""

# copy: KEYS[1] = source meta, KEYS[2] = destination meta, KEYS[3 .. 2+n] =
# the source's state keys, KEYS[3+n .. 2+2n] = the destination's (same
# order), KEYS[3+2n ..] = other keys of what the destination holds now
# (deleted with replace).  ARGV[1] = the source's gen, ARGV[2] = the copy's
# gen, ARGV[3] = '1': replace, ARGV[4] = n, ARGV[4+i] = 'h' (state key i is
# a hash holding gen) or the exact length of state string i.
_LUA_COPY = """
local n = tonumber(ARGV[4])
if redis.call('HGET', KEYS[1], 'gen') ~= ARGV[1]
   or redis.call('HGET', KEYS[1], 'state') ~= 'ready' then
  return redis.error_reply('BKGONE bloomkit structure was deleted or replaced')
end
for i = 1, n do
  local src, want = KEYS[2 + i], ARGV[4 + i]
  if want == 'h' then
    if redis.call('HGET', src, 'gen') ~= ARGV[1] then
      return redis.error_reply('BKGONE bloomkit structure was deleted or replaced')
    end
  elseif redis.call('STRLEN', src) ~= tonumber(want) then
    return redis.error_reply('BKGONE bloomkit structure was deleted or replaced')
  end
end
local dst = {KEYS[2]}
for i = 3 + n, #KEYS do dst[#dst + 1] = KEYS[i] end
if ARGV[3] == '1' then
  redis.call('DEL', unpack(dst))
else
  for i = 1, #dst do
    if redis.call('EXISTS', dst[i]) == 1 then
      return redis.error_reply('BKEXISTS ' .. dst[i])
    end
  end
end
for i = 1, n do
  redis.call('COPY', KEYS[2 + i], KEYS[2 + n + i])
  if ARGV[4 + i] == 'h' then redis.call('HSET', KEYS[2 + n + i], 'gen', ARGV[2]) end
end
redis.call('COPY', KEYS[1], KEYS[2])
redis.call('HSET', KEYS[2], 'gen', ARGV[2])
return 1
"""

# ---- End Lua scripts ----------------------------------------------------------

CLEAR_STATE = Script(_LUA_CLEAR_STATE)
COPY_SCRIPT = Script(_LUA_COPY)
SCRIPTS.update({s.sha: s.body for s in (CLEAR_STATE, COPY_SCRIPT)})


def clear_state(handle: Any, data_key: str, hash_key: str, length: int,
                reset: list[Any], timed: bool = False, bump: str = "") -> int:
    """Empty one state string and reset its hash to ``reset`` atomically
    (and add 1 to the field ``bump``); the server's time used for '@now'
    (0 unless ``timed``)."""
    try:
        now = CLEAR_STATE.run(handle.client, [data_key, hash_key],
                              [handle._gen, length, "t" if timed else "", bump, *reset])
    except (_RedisConnectionError, _RedisTimeoutError) as exc:
        raise wrap_connection_error(exc, "clear") from exc
    except ResponseError as exc:
        raise map_response_error(exc, handle.name) from exc
    return int(now)


def _keys_held(client: Any, name: str) -> list[str]:
    """Every key a bloomkit structure called ``name`` may hold now (its meta
    says how many shards), for ``replace``."""
    try:
        raw = client.hget(meta_key_of(name), "shards")
    except ResponseError:  # not a hash: the script's DEL removes it anyway
        raw = None
    shards = int(raw) if raw is not None and as_text(raw).isdigit() else 1
    bits, hashes = shard_key_names(name, max(1, min(shards, 1 << 16)))
    out = [*bits, *hashes, f"{{{name}}}:ctr"]
    if shards != 1:  # and the unsharded names
        out += [f"{{{name}}}:bits", f"{{{name}}}:n"]
    return out


def copy_structure(handle: Any, name: str, replace: bool, data: list[tuple[str, str, int]],
                   hashes: list[tuple[str, str]]) -> None:
    """Copy the structure of ``handle`` to ``name`` in one script.

    ``data``: (source key, destination key, exact length) of each state
    string; ``hashes``: (source key, destination key) of each state hash."""
    if not isinstance(replace, bool):
        raise TypeError(f"replace must be True or False, not {type(replace).__name__}")
    name = check_name(name)
    if name == handle.name:
        raise ValueError(f"copy({name!r}): the copy needs a name other than the source's")
    if is_cluster(handle.client):
        raise RedisFilterError(
            "copy() is not available on Redis Cluster: the new name's keys hash to other "
            "slots than the source's and one script cannot span slots, so the copy could "
            "not be atomic (to_local(), then merge_from() into a new filter, is the "
            "non-atomic way)")
    src = [k for k, _, _ in data] + [k for k, _ in hashes]
    dst = [k for _, k, _ in data] + [k for _, k in hashes]
    kinds = [str(n) for _, _, n in data] + ["h"] * len(hashes)
    try:
        extra = [k for k in _keys_held(handle.client, name) if k not in dst] if replace else []
        COPY_SCRIPT.run(handle.client,
                        [meta_key_of(handle.name), meta_key_of(name), *src, *dst, *extra],
                        [handle._gen, _secrets.token_hex(8), "1" if replace else "0",
                         len(src), *kinds])
    except (_RedisConnectionError, _RedisTimeoutError) as exc:
        raise wrap_connection_error(exc, f"copy({name!r})") from exc
    except ResponseError as exc:
        if "BKEXISTS" in str(exc):
            key = str(exc).split("BKEXISTS", 1)[1].strip()
            raise FilterExistsError(
                f"copy({name!r}): the Redis key {key!r} already exists (pass replace=True "
                "to overwrite what is stored there)") from exc
        raise map_response_error(exc, handle.name) from exc


def refuse_shallow_copy(handle: Any) -> Any:
    raise TypeError(
        f"copy.copy() of a {type(handle).__name__} has no meaning: a copy in Redis needs a "
        "name (f.copy(name) copies the structure on the server, atomically); "
        "f.to_local() is a local copy")
