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


# ==== Sliding (age-partitioned) Bloom filter ========================================
#
# The algorithm is bk_sliding.h's, step for step (docs/sliding.md, "The exact
# algorithm"); the state the C core keeps in its header lives in the hash
# KEYS[2] = {name}:n: gen (this creation), g (generation counter), r (ring
# position, g mod S), c (insertions of generation g that set a bit), inserted,
# start (time mode: start of generation g, microseconds of the server's TIME),
# early (early shifts), and b<p> = "<inserted> <time>" per physical slice p
# (its birth record).  KEYS[1] = {name}:bits holds the S slices of m bits in
# physical order, exactly the local payload after the births.
#
# ARGV[1] = gen, ARGV[2] = length of the slices string, ARGV[3] = S, ARGV[4]
# = k, ARGV[5] = m, ARGV[6] = G, ARGV[7] = window_us (0: count mode), ARGV[8]
# = D = ceil(window_us / l), ARGV[9] = per key, S little-endian u32: the Redis
# bit offset of the key's bit in physical slice p, p = 0 .. S-1, i.e.
# (p * m + pos(h, p)) ^ 7.  The client cannot know g (another client may
# shift at any moment), so it sends every slice's offset and the script
# picks the k youngest; struct.unpack reads a key's S offsets in one call.
#
# Numbers: Lua 5.1 numbers are doubles, exact below 2^53; times (about
# 1.8e15 us), counters and g stay far below.  Every number written back goes
# through string.format('%d') (tostring would print 1.8e+15).

_LUA_SLIDING_HEAD = """
if redis.replicate_commands then redis.replicate_commands() end
local st = redis.call('HMGET', KEYS[2], 'gen', 'g', 'c', 'inserted', 'start', 'early')
if st[1] ~= ARGV[1] or redis.call('STRLEN', KEYS[1]) ~= tonumber(ARGV[2]) then
  return redis.error_reply('BKGONE bloomkit filter was deleted or replaced')
end
local S, k, m, G = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local W, D = tonumber(ARGV[7]), tonumber(ARGV[8])
local g, c, ins = tonumber(st[2]), tonumber(st[3]), tonumber(st[4])
local start, early = tonumber(st[5]), tonumber(st[6])
-- a damaged or foreign state never answers (issue #34 item 12): every field
-- an integer the doubles hold exactly (below 2^53), else a wrong slice
local function bad(v, signed)
  return v == nil or v ~= v or v % 1 ~= 0 or v >= 9007199254740992
    or v < (signed and -9007199254740992 or 0)
end
if bad(g) or bad(c) or bad(ins) or bad(early) or bad(start, true) then
  return redis.error_reply('BKCORRUPT damaged state hash: g, c, inserted, start and early must '
    .. 'be integers below 2^53')
end
local rec = ARGV[9]
local fmtS = '<' .. string.rep('I4', S)
local now = 0
if W > 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
-- pending time shifts at now: (now - start) // D, 0 when now <= start
local pending = 0
if W > 0 and now > start then
  local diff = now - start
  pending = math.floor(diff / D)
  while pending * D > diff do pending = pending - 1 end
  while (pending + 1) * D <= diff do pending = pending + 1 end
end
"""

# The query of bk_sliding_contains_at, probe for probe: a run of k set ages
# among [skip, S) holds one of the "checkpoint" ages skip + k - 1,
# skip + 2k - 1, ...; only around a set checkpoint are its neighbours probed,
# and after an unset age b the next checkpoint is b + k.  An absent key
# costs about 9 probes on a full 1% filter (k = 9, S = 41; measured, see
# docs/sliding.md), a present one up to k + a few (GETBIT each, one command
# per probe: far cheaper than reading all S bits of every key).
# bit(a) is the bit of age a (0 or 1).
_LUA_SLIDING_RUN = """
local function run_at(bit, skip)
  if skip + k > S then return false end
  local a = skip + k - 1
  while a < S do
    if bit(a) == 0 then
      a = a + k
    else
      local left = 0
      local b = a
      while b > skip and left < k - 1 do
        if bit(b - 1) == 0 then break end
        left = left + 1
        b = b - 1
      end
      local need = k - 1 - left
      b = a + 1
      while need > 0 do
        if b >= S then return false end
        if bit(b) == 0 then break end
        b = b + 1
        need = need - 1
      end
      if need == 0 then return true end
      a = b + k
    end
  end
  return false
end
"""

# add (generated for the filter's k: _sliding_add_script): ARGV[1..9] as
# above, ARGV[10] = hg, the generation of the client's hints (-1: none),
# ARGV[11] = the hints, per key k + 2 numbers, each written as two spaces and
# 10 decimal digits (the pattern drops the leading zeros, which Redis's
# string2ll refuses): the key's Redis offsets in the slices of ages 0 .. k-1
# at generation hg and in the slice of age S-1 at hg (the youngest at hg + 1),
# then 100 c0 + c1, the answers of the frozen slices (below).
#
# Why hints.  An add owes "was the key absent", a query over all S slices;
# probing the older ones from here costs a Redis call per bit (about 3,400
# server instructions a GETBIT, 2,500 a BITFIELD op, and 4,200 more per
# argument sent as a Lua number: Redis formats it with %.17g), several per
# absent key.  But slices of age >= k are frozen: adds set bits in the k
# youngest only, a shift clears the oldest and makes it the youngest, so a
# slice's bits are final once it is k generations old, until it is cleared.
# A client that holds the frozen slices of generation hg (read once, then
# one slice a generation) answers their part of the query itself:
#   c0 = k if ages k .. S-1 at hg hold k consecutive set bits of the key,
#        else the number of consecutive set bits from age k up;
#   c1 = the same for generation hg + 1, whose ages k+1 .. S-1 are ages
#        k .. S-2 at hg (c0, c1 < k but for the k flag).
# At generation hg the script sets the k young bits (one BITFIELD, offsets as
# the strings the client sent) and, with t = the consecutive set old bits
# from age k-1 down, the key was present iff t + c0 >= k (t = k: the k
# youngest all set).  At hg + 1 the slice of age k (age k-1 at hg, the one
# the hints do not cover) is read in the same BITFIELD: present iff c1 = k
# or t + (bit_k = 1 ? 1 + c1 : 0) >= k.  Any other generation (a shift the
# client has not seen yet, or no hints) takes the full query below, on the
# binary records.  The same answer either way: the query is a function of
# the bits, and the frozen ones are the bits the client read.
#
# Returns {'1' per key that was absent (add's value), or '0'; early shifts
# so far; g; the keys the hints answered at hg, at hg + 1; clears}.  Full query: one
# BITFIELD SETs the k youngest slices' bits and returns their old values
# (ages 0 .. k-1 before the insert) with the aligned checkpoint ages 2k-1,
# 3k-1, ...; the query before the insert probes older ages with GETBIT only
# when those k are not all set.
_LUA_SLIDING_ADD = _LUA_SLIDING_HEAD + _LUA_SLIDING_RUN + """
local function fmt(x) return string.format('%d', x) end
local K = KEYS[1]
-- one BITFIELD per key: SET u1 in the k youngest slices (ages 0 .. k-1),
-- then GET u1 of the aligned checkpoints 2k-1, 3k-1, ... < S (the ones the
-- query of an absent key visits first)
local args = {}
for a = 0, k - 1 do
  args[4 * a + 1] = 'SET'; args[4 * a + 2] = 'u1'; args[4 * a + 3] = 0; args[4 * a + 4] = '1'
end
-- at[a] = the reply index of age a's bit when the BITFIELD returns it
local cps, at = {}, {}
for a = 0, k - 1 do at[a] = a + 1 end
for a = 2 * k - 1, S - 1, k do
  local n = #args
  args[n + 1] = 'GET'; args[n + 2] = 'u1'; args[n + 3] = 0
  cps[#cps + 1] = a
  at[a] = k + #cps
end
local hg = tonumber(ARGV[10])
-- ARGV[12]: the state's 'clears' when the client read its copy (clear()
-- makes generation numbers repeat: a copy of before it never matches)
if hg >= 0 and (redis.call('HGET', KEYS[2], 'clears') or '0') ~= ARGV[12] then hg = -1 end
local hit
if hg >= 0 then hit = string.gmatch(ARGV[11], '@PATTERN@') end
-- ph[a] = the record index of the physical slice of age a at generation g
local ph = {}
local function template()
  for a = 0, S - 1 do ph[a] = (g - a) % S + 1 end
end
-- move to generation g + n: clear the min(n, S) slices that become the
-- youngest, the j-th born at birth0 + j * step (bk_sliding_shift_by)
local zero
local function shift_by(n, birth0, step)
  local first = 1
  if n > S then first = n - S + 1 end
  if zero == nil then zero = string.rep('\\0', m / 8) end
  local hs = {}
  for j = first, n do
    local p = (g + j) % S
    redis.call('SETRANGE', K, p * (m / 8), zero)
    hs[#hs + 1] = 'b' .. p
    hs[#hs + 1] = fmt(ins) .. ' ' .. fmt(birth0 + j * step)
  end
  redis.call('HSET', KEYS[2], unpack(hs))
  g = g + n
  c = 0
  template()
end
template()
if pending > 0 then
  shift_by(pending, start, D)
  start = start + pending * D
end
local out = {}
local nkeys = #rec / (4 * S)
local hinted0, hinted1 = 0, 0
local v, old
local function bit(a)
  local i = at[a]
  if i then return old[i] end
  return redis.call('GETBIT', K, v[ph[a]])
end
for j = 1, nkeys do
  if c >= G then  -- the generation is full: shift (time mode: early)
    if W > 0 then
      shift_by(1, now, 0)
      start = now
      early = early + 1
    else
      shift_by(1, 0, 0)
    end
  end
  local d = g - hg
  local was
  local t = 0
  local @LOCALS@, cc
  if hit then @LOCALS@, cc = hit() end
  local path = 2  -- 0, 1: the hints of generation hg, hg + 1; 2: the full query
  if hit and d == 0 then
    path = 0
    old = redis.call('BITFIELD', K, @SET0@)
  elseif hit and d == 1 then
    path = 1
    old = redis.call('BITFIELD', K, @SET1@)
  else
    v = {struct.unpack(fmtS, rec, (j - 1) * 4 * S + 1)}
    for a = 0, k - 1 do args[4 * a + 3] = v[ph[a]] end
    for i = 1, #cps do args[4 * k + 3 * i] = v[ph[cps[i]]] end
    old = redis.call('BITFIELD', K, unpack(args))
  end
  for a = k, 1, -1 do  -- t: the set old bits from age k-1 down
    if old[a] == 0 then break end
    t = t + 1
  end
  if t == k then
    was = true
  elseif path == 0 then
    -- cc = 100 c0 + c1 (c1 < 100): t + c0 >= k iff 100 t + cc >= 100 k
    was = 100 * t + tonumber(cc) >= 100 * k
  elseif path == 1 then
    local c1 = tonumber(cc) % 100  -- old[k + 1]: the bit of age k
    was = c1 >= k or (old[k + 1] == 1 and t + 1 + c1 >= k)
  else
    was = run_at(bit, 0)  -- the query before the insert
  end
  if path == 0 then hinted0 = hinted0 + 1 elseif path == 1 then hinted1 = hinted1 + 1 end
  if t < k then  -- a young bit was 0: a new insertion
    c = c + 1
    ins = ins + 1
  end
  if was then out[j] = '0' else out[j] = '1' end
end
redis.call('HSET', KEYS[2], 'g', fmt(g), 'r', fmt(g % S), 'c', fmt(c), 'inserted', fmt(ins),
           'start', fmt(start), 'early', fmt(early))
return {table.concat(out), fmt(early), fmt(g), hinted0, hinted1,
        redis.call('HGET', KEYS[2], 'clears') or '0'}
"""

# contains: ARGV as above; writes nothing.  The query at effective
# generation g + pending with the pending youngest ages empty
# (bk_sliding_contains).  Returns '1' (present) or '0' per key.
_LUA_SLIDING_CONTAINS = _LUA_SLIDING_HEAD + _LUA_SLIDING_RUN + """
local nkeys = #rec / (4 * S)
if pending >= S then return string.rep('0', nkeys) end
local ge = g + pending
local K = KEYS[1]
local ph = {}
for a = 0, S - 1 do ph[a] = (ge - a) % S + 1 end
local v
local function bit(a) return redis.call('GETBIT', K, v[ph[a]]) end
local out = {}
local pos = 1
for j = 1, nkeys do
  v = {struct.unpack(fmtS, rec, pos)}
  pos = v[S + 1]
  if run_at(bit, pending) then out[j] = '1' else out[j] = '0' end
end
return table.concat(out)
"""

# create: (re)initialise the slices and the state.  ARGV[1] = gen, ARGV[2] =
# length, ARGV[3..] = field, value pairs of the state hash.
_LUA_SLIDING_INIT = """
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SETRANGE', KEYS[1], tonumber(ARGV[2]) - 1, '\\0')
redis.call('HSET', KEYS[2], 'gen', ARGV[1], unpack(ARGV, 3))
return 1
"""

SLIDING_CONTAINS = Script(_LUA_SLIDING_CONTAINS)
SLIDING_INIT = Script(_LUA_SLIDING_INIT)
SCRIPTS.update({s.sha: s.body for s in (SLIDING_CONTAINS, SLIDING_INIT)})
_SLIDING_ADD_SCRIPTS: dict[int, Script] = {}


def _sliding_add_body(k: int) -> str:
    """The add script of a k-slice filter: the hinted paths take the key's
    k + 2 numbers into locals and pass them straight to one BITFIELD (no
    argument table, no unpack; as for _bloom_script)."""
    names = [f"o{a}" for a in range(k + 1)]  # ages 0 .. k-1 at hg, then age S-1
    set0 = ", ".join(f"'SET', 'u1', o{a}, '1'" for a in range(k))
    set1 = ", ".join([f"'SET', 'u1', o{k}, '1'"]
                     + [f"'SET', 'u1', o{a - 1}, '1'" for a in range(1, k)]
                     + [f"'GET', 'u1', o{k - 1}"])
    return (_LUA_SLIDING_ADD.replace("@PATTERN@", " +0*(%d+)" * (k + 2))
            .replace("@LOCALS@", ", ".join(names)).replace("@SET0@", set0)
            .replace("@SET1@", set1))


def sliding_add_script(k: int) -> Script:
    """The cached add script for k slices a key (registered for NOSCRIPT)."""
    script = _SLIDING_ADD_SCRIPTS.get(k)
    if script is None:
        script = _SLIDING_ADD_SCRIPTS[k] = Script(_sliding_add_body(k))
        SCRIPTS[script.sha] = script.body
    return script
