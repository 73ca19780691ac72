"""The Lua scripts, run by EVALSHA (EVAL again on NOSCRIPT).

A script is the unit of atomicity of every structure: Redis runs one script
at a time, so a key's k bits (or counters) are set all-or-nothing and the
counter of new adds moves with them.  Scripts take bit or counter offsets
computed on the client (Redis never sees the keys) and begin with an O(1)
check that the structure still belongs to the handle (``BKGONE``).

``_SCRIPTS`` maps every script's SHA-1 to its body, so a pipeline that got
NOSCRIPT (a restarted server, SCRIPT FLUSH) can send the body instead.
"""

from __future__ import annotations

import hashlib
from typing import Any

from redis.exceptions import NoScriptError

# ---- Begin Lua scripts --------------------------------------------------------
#
# Every script checks, in O(1), that the shard still belongs to the handle:
# the shard hash's ``gen`` (a random id written by ``create``) and the exact
# length of the bits string.  A filter deleted (or deleted and created again)
# under a live handle is an error, never a silently re-grown key.
#
# KEYS[1] = the shard's bits string, KEYS[2] = the shard's hash
#           {gen, adds, base}.
# ARGV[1] = gen, ARGV[2] = the shard's length in bytes, ARGV[3] = k,
# ARGV[4] = the keys' Redis bit offsets, k per key, in decimal separated by
#           spaces: global bit p of shard s is offset (p - s * shard_bits) ^ 7.
# Offsets travel as text and reach BITFIELD as the very strings string.gmatch
# yields: no number-to-string conversion per argument (measured about 30%
# less server CPU than sending binary u64s and converting in Lua).

_LUA_CHECK = """
if redis.call('HGET', KEYS[2], 'gen') ~= ARGV[1]
   or redis.call('STRLEN', KEYS[1]) ~= tonumber(ARGV[2]) then
  return redis.error_reply('BKGONE bloomkit filter was deleted or replaced')
end
local k = tonumber(ARGV[3])
local out = {}
local args = {}
local i = 0
local j = 0
"""

# add / contains are generated for the filter's k (_bloom_script): the loop
# takes k offsets from the string.gmatch iterator straight into the argument
# list of one BITFIELD (BITFIELD_RO) per key, and tests the k replies with an
# unrolled condition -- no argument table, no unpack, no inner loop.  Same
# commands and the same atomicity as a loop over an argument table, measured
# about 10% less server CPU per key (docs/redis.md, "Throughput").
_LUA_BLOOM = """
if redis.call('HGET', KEYS[2], 'gen') ~= ARGV[1]
   or redis.call('STRLEN', KEYS[1]) ~= tonumber(ARGV[2]) then
  return redis.error_reply('BKGONE bloomkit filter was deleted or replaced')
end
local K = KEYS[1]
local it = string.gmatch(ARGV[4], '%d+')
local out = {}
local new = 0
local j = 0
while true do
  local o = it()
  if o == nil then break end
  local b = redis.call(@CALL@)
  j = j + 1
  if @TEST@ then new = new + 1; out[j] = '1' else out[j] = '0' end
end
@TAIL@
return table.concat(out)
"""


def _bloom_script_body(op: str, k: int) -> str:
    """The add (``op == "add"``) or contains script of a k-probe filter."""
    if op == "add":
        call = "'BITFIELD', K, " + ", ".join(
            ["'SET', 'u1', o, '1'"] + ["'SET', 'u1', it(), '1'"] * (k - 1))
        test = " or ".join(f"b[{q}] == 0" for q in range(1, k + 1))
        tail = "if new > 0 then redis.call('HINCRBY', KEYS[2], 'adds', new) end"
    else:
        call = "'BITFIELD_RO', K, " + ", ".join(
            ["'GET', 'u1', o"] + ["'GET', 'u1', it()"] * (k - 1))
        test = " and ".join(f"b[{q}] == 1" for q in range(1, k + 1))
        tail = ""
    return _LUA_BLOOM.replace("@CALL@", call).replace("@TEST@", test).replace("@TAIL@", tail)


# merge: KEYS[3] = the uploaded local slice (same length as the shard).
_LUA_MERGE = (
    _LUA_CHECK
    + """
if redis.call('STRLEN', KEYS[3]) ~= tonumber(ARGV[2]) then
  redis.call('DEL', KEYS[3])
  return redis.error_reply('BKUPLOAD merge upload incomplete')
end
redis.call('BITOP', 'OR', KEYS[1], KEYS[1], KEYS[3])
redis.call('DEL', KEYS[3])
local pop = redis.call('BITCOUNT', KEYS[1])
redis.call('HSET', KEYS[2], 'base', pop, 'adds', 0)
return pop
"""
)

# create: claim the name (KEYS[1] = meta) if free.
_LUA_CLAIM = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1
"""

# create: (re)initialise one shard: ARGV[1] = gen, ARGV[2] = length.
_LUA_INIT_SHARD = """
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SETRANGE', KEYS[1], tonumber(ARGV[2]) - 1, '\\0')
redis.call('HSET', KEYS[2], 'gen', ARGV[1], 'adds', 0, 'base', 0)
return 1
"""

# clear: empty one shard of a live filter (ARGV[1] = gen, ARGV[2] = length):
# unlike init, it refuses a shard that is not this filter's (deleted or
# re-created: BKGONE; another type: WRONGTYPE from HGET/STRLEN).
_LUA_CLEAR_SHARD = """
if redis.call('HGET', KEYS[2], 'gen') ~= ARGV[1]
   or redis.call('STRLEN', KEYS[1]) ~= tonumber(ARGV[2]) then
  return redis.error_reply('BKGONE bloomkit filter was deleted or replaced')
end
redis.call('DEL', KEYS[1])
redis.call('SETRANGE', KEYS[1], tonumber(ARGV[2]) - 1, '\\0')
redis.call('HSET', KEYS[2], 'adds', 0, 'base', 0)
return 1
"""

# snapshot of one shard's counter with its bits (to_local) on a cluster
# client: see _read_shard.  ARGV[1] = the shard's length, ARGV[2] = piece size;
# returns gen, adds, base (nil when missing), then the pieces of the bits.
_LUA_READ_SHARD = """
local out = redis.call('HMGET', KEYS[2], 'gen', 'adds', 'base')
local len, piece = tonumber(ARGV[1]), tonumber(ARGV[2])
for off = 0, len - 1, piece do
  out[#out + 1] = redis.call('GETRANGE', KEYS[1], off, math.min(off + piece, len) - 1)
end
return out
"""
# ---- End Lua scripts ----------------------------------------------------------


class Script:
    """A Lua script run by EVALSHA, falling back to EVAL on NOSCRIPT."""

    def __init__(self, body: str) -> None:
        self.body = body
        self.sha = hashlib.sha1(body.encode()).hexdigest()

    def args(self, keys: list[str], argv: list[Any]) -> list[Any]:
        return [self.sha, len(keys), *keys, *argv]

    def run(self, client: Any, keys: list[str], argv: list[Any]) -> Any:
        try:
            return client.execute_command("EVALSHA", *self.args(keys, argv))
        except NoScriptError:
            return client.execute_command("EVAL", self.body, len(keys), *keys, *argv)


MERGE_SCRIPT = Script(_LUA_MERGE)
CLAIM_SCRIPT = Script(_LUA_CLAIM)
INIT_SHARD = Script(_LUA_INIT_SHARD)
CLEAR_SHARD = Script(_LUA_CLEAR_SHARD)
READ_SHARD = Script(_LUA_READ_SHARD)


SCRIPTS = {s.sha: s.body for s in (MERGE_SCRIPT, CLAIM_SCRIPT, INIT_SHARD, CLEAR_SHARD,
                                   READ_SHARD)}
_BLOOM_SCRIPTS: dict[tuple[str, int], Script] = {}


def bloom_script(op: str, k: int) -> Script:
    """The cached add / contains script for k probes (registered for NOSCRIPT)."""
    script = _BLOOM_SCRIPTS.get((op, k))
    if script is None:
        script = _BLOOM_SCRIPTS[(op, k)] = Script(_bloom_script_body(op, k))
        SCRIPTS[script.sha] = script.body
    return script


# ==== Counting Bloom filter and count-min sketch ===================================
#
# Same principle as RedisBloomFilter, unsharded: one string {name}:ctr holding
# the counters, one hash {name}:n holding gen and the header counters, the meta
# hash {name}:meta.  Positions come from an empty local structure of the same
# shape; Redis sees counter offsets only.  Counter widths and byte order:
#
#   counting u4: the local bytes as they are; our counter i is Redis `u4 #(i^1)`.
#   counting u8: the local bytes as they are; counter i is `u8 #i`.
#   counting u16, CMS u32: Redis BITFIELD integers are big-endian, the local
#       format little-endian, so the Redis string holds every counter in
#       BIG-endian order (counter i is `u16 #i` / `u32 #i`) and to_local /
#       merge_from swap the bytes of each counter.
#
# Every script checks gen and the exact length first (BKGONE), then does its
# first write only once it can no longer fail, so a refused call changes
# nothing.

_LUA_CCHECK = """
if redis.call('HGET', KEYS[2], 'gen') ~= ARGV[1]
   or redis.call('STRLEN', KEYS[1]) ~= tonumber(ARGV[2]) then
  return redis.error_reply('BKGONE bloomkit structure was deleted or replaced')
end
local k = tonumber(ARGV[3])
local T = ARGV[4]
"""

# counting add: ARGV[5] = offsets ('#j'), k per key.  One BITFIELD per key:
# OVERFLOW SAT then k INCRBY 1; a returned 1 is a counter that was 0 (SAT
# never yields 1 otherwise), so "was new" and the nonzero count are exact.
_LUA_CB_ADD = (
    _LUA_CCHECK
    + """
local args = {'OVERFLOW', 'SAT'}
for q = 1, k do args[4 * q - 1] = 'INCRBY'; args[4 * q] = T; args[4 * q + 2] = '1' end
local out = {}
local i = 0
local j = 0
local new = 0
local nz = 0
for o in string.gmatch(ARGV[5], '%S+') do
  i = i + 1
  args[4 * i + 1] = o
  if i == k then
    i = 0
    j = j + 1
    local v = redis.call('BITFIELD', KEYS[1], unpack(args))
    local was = '0'
    for q = 1, k do
      if v[q] == 1 then was = '1'; nz = nz + 1 end
    end
    if was == '1' then new = new + 1 end
    out[j] = was
  end
end
redis.call('HINCRBY', KEYS[2], 'count', j)
if new > 0 then
  redis.call('HINCRBY', KEYS[2], 'dc', new)
  redis.call('HINCRBY', KEYS[2], 'dd', new)
end
if nz > 0 then redis.call('HINCRBY', KEYS[2], 'nz', nz) end
return table.concat(out)
"""
)

# counting remove: ARGV[5] = counter max, ARGV[6] = offsets.  Keys in order;
# at the first key with a zero counter stop (that key and the rest untouched).
# Saturated counters are not decremented.  Returns {removed, stopped}.
_LUA_CB_REMOVE = (
    _LUA_CCHECK
    + """
local mx = tonumber(ARGV[5])
local gargs = {}
for q = 1, k do gargs[3 * q - 2] = 'GET'; gargs[3 * q - 1] = T end
local offs = {}
local i = 0
local removed = 0
local zeroed = 0
local nzdec = 0
local stopped = 0
for o in string.gmatch(ARGV[6], '%S+') do
  i = i + 1
  offs[i] = o
  gargs[3 * i] = o
  if i == k then
    i = 0
    local old = redis.call('BITFIELD_RO', KEYS[1], unpack(gargs))
    local absent = false
    for q = 1, k do
      if old[q] == 0 then absent = true; break end
    end
    if absent then stopped = 1; break end
    local dargs = {'OVERFLOW', 'SAT'}
    local dq = {}
    for q = 1, k do
      if old[q] ~= mx then
        local n = #dargs
        dargs[n + 1] = 'INCRBY'; dargs[n + 2] = T; dargs[n + 3] = offs[q]; dargs[n + 4] = '-1'
        dq[#dq + 1] = offs[q]
      end
    end
    if #dq > 0 then
      local v = redis.call('BITFIELD', KEYS[1], unpack(dargs))
      local seen = {}
      local z = false
      for q = 1, #dq do
        if v[q] == 0 then
          z = true
          if not seen[dq[q]] then seen[dq[q]] = true; nzdec = nzdec + 1 end
        end
      end
      if z then zeroed = zeroed + 1 end
    end
    removed = removed + 1
  end
end
if removed > 0 then
  local c = tonumber(redis.call('HGET', KEYS[2], 'count'))
  if c >= removed then
    redis.call('HINCRBY', KEYS[2], 'count', -removed)
  else
    redis.call('HSET', KEYS[2], 'count', 0)
  end
end
if zeroed > 0 then
  local dc = tonumber(redis.call('HGET', KEYS[2], 'dc'))
  redis.call('HSET', KEYS[2], 'dc', math.max(0, dc - zeroed))
  redis.call('HINCRBY', KEYS[2], 'dd', -zeroed)
end
if nzdec > 0 then redis.call('HINCRBY', KEYS[2], 'nz', -nzdec) end
return {removed, stopped}
"""
)

# counting count / CMS estimate: the minimum of each key's k counters.
_LUA_MIN = (
    _LUA_CCHECK
    + """
local args = {}
for q = 1, k do args[3 * q - 2] = 'GET'; args[3 * q - 1] = T end
local out = {}
local i = 0
local j = 0
for o in string.gmatch(ARGV[5], '%S+') do
  i = i + 1
  args[3 * i] = o
  if i == k then
    i = 0
    j = j + 1
    local v = redis.call('BITFIELD_RO', KEYS[1], unpack(args))
    local m = v[1]
    for q = 2, k do if v[q] < m then m = v[q] end end
    out[j] = m
  end
end
return out
"""
)

# merge (both structures): ARGV[5] = the field to add ARGV[6] to ('count' or
# 'total'), ARGV[7] = 'offset value' pairs of the local's nonzero counters.
# The HINCRBY comes first: if it would overflow int64 it fails before any
# counter changed.  Then GET+INCRBY (SAT) per counter: the saturating sum;
# the old values give the exact number of counters that became nonzero.
_LUA_MERGE_CTR = (
    _LUA_CCHECK
    + """
local ok = redis.pcall('HINCRBY', KEYS[2], ARGV[5], ARGV[6])
if type(ok) == 'table' and ok.err then
  return redis.error_reply('BKOVERFLOW ' .. ARGV[5] .. ' would exceed 2^63-1')
end
local args = {'OVERFLOW', 'SAT'}
local n = 2
local nzinc = 0
local function flush()
  if n > 2 then
    local r = redis.call('BITFIELD', KEYS[1], unpack(args, 1, n))
    for a = 1, #r, 2 do
      if r[a] == 0 then nzinc = nzinc + 1 end
    end
  end
  n = 2
end
for o, v in string.gmatch(ARGV[7], '(%S+) (%S+)') do
  args[n + 1] = 'GET'; args[n + 2] = T; args[n + 3] = o
  args[n + 4] = 'INCRBY'; args[n + 5] = T; args[n + 6] = o; args[n + 7] = v
  n = n + 7
  if n > 7000 then flush() end
end
flush()
if ARGV[5] == 'count' then
  local nz = redis.call('HINCRBY', KEYS[2], 'nz', nzinc)
  redis.call('HSET', KEYS[2], 'base', nz, 'dc', 0, 'dd', 0)
  return nz
end
return nzinc
"""
)

# CMS add: ARGV[5] = '1' conservative, ARGV[6] = counter max, ARGV[7] = the
# sum of the counts, ARGV[8] = per key: its count (already clamped to the
# counter max) then its d offsets.  total first (fails before any write),
# then per key ONE BITFIELD (plain: SAT INCRBY per row) or, conservative, a
# read and one BITFIELD SET of the rows below the new estimate.
_LUA_CMS_ADD = (
    _LUA_CCHECK
    + """
local ok = redis.pcall('HINCRBY', KEYS[2], 'total', ARGV[7])
if type(ok) == 'table' and ok.err then
  return redis.error_reply('BKOVERFLOW total would exceed 2^63-1')
end
local cons = ARGV[5] == '1'
local mx = tonumber(ARGV[6])
local out = {}
local args = {'OVERFLOW', 'SAT'}
local gargs = {}
for q = 1, k do
  args[4 * q - 1] = 'INCRBY'; args[4 * q] = T
  gargs[3 * q - 2] = 'GET'; gargs[3 * q - 1] = T
end
local offs = {}
local cnt = nil
local cs = nil
local i = 0
local j = 0
for o in string.gmatch(ARGV[8], '%S+') do
  if cnt == nil then
    cs = o
    cnt = tonumber(o)
  else
    i = i + 1
    offs[i] = o
    args[4 * i + 1] = o
    args[4 * i + 2] = cs
    gargs[3 * i] = o
    if i == k then
      i = 0
      j = j + 1
      if cons then
        local v = redis.call('BITFIELD', KEYS[1], unpack(gargs))
        local m = v[1]
        for q = 2, k do if v[q] < m then m = v[q] end end
        local target = math.min(m + cnt, mx)
        local sargs = {}
        for q = 1, k do
          if v[q] < target then
            local n = #sargs
            sargs[n + 1] = 'SET'; sargs[n + 2] = T; sargs[n + 3] = offs[q]
            sargs[n + 4] = string.format('%d', target)
          end
        end
        if #sargs > 0 then redis.call('BITFIELD', KEYS[1], unpack(sargs)) end
        out[j] = target
      else
        local v = redis.call('BITFIELD', KEYS[1], unpack(args))
        local m = v[1]
        for q = 2, k do if v[q] < m then m = v[q] end end
        out[j] = m
      end
      cnt = nil
    end
  end
end
return out
"""
)

_LUA_INIT_CTR = """
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SETRANGE', KEYS[1], tonumber(ARGV[2]) - 1, '\\0')
redis.call('HSET', KEYS[2], 'gen', ARGV[1], unpack(ARGV, 3))
return 1
"""

CB_ADD = Script(_LUA_CB_ADD)
CB_REMOVE = Script(_LUA_CB_REMOVE)
MIN_SCRIPT = Script(_LUA_MIN)
MERGE_CTR = Script(_LUA_MERGE_CTR)
CMS_ADD = Script(_LUA_CMS_ADD)
INIT_CTR = Script(_LUA_INIT_CTR)
SCRIPTS.update({s.sha: s.body for s in (CB_ADD, CB_REMOVE, MIN_SCRIPT, MERGE_CTR, CMS_ADD,
                                         INIT_CTR)})
