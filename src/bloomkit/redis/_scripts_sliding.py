"""The Lua scripts of RedisSlidingBloomFilter (sliding.py), both layouts,
registered with the others (_scripts.py) for NOSCRIPT."""

from __future__ import annotations

from ._scripts import SCRIPTS, Script

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
local st = redis.call('HMGET', KEYS[2], 'gen', 'g', 'c', 'inserted', 'start', 'early',
                      'layout')
if st[1] ~= ARGV[1] or redis.call('STRLEN', KEYS[1]) ~= tonumber(ARGV[2]) then
  return redis.error_reply('BKGONE bloomkit filter was deleted or replaced')
end
-- the layout of the slices (a state written before layout 1 has no field:
-- layout 0); each script implements one and refuses the other
if (st[7] or '0') ~= '@LAYOUT@' then
  return redis.error_reply('BKCORRUPT damaged state hash: layout is not the layout_version '
    .. '@LAYOUT@ in the meta of the filter')
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

# ---- Layout 1 ("blocked", bk_sliding_blocked.c) ----------------------------------
#
# KEYS[1] = {name}:bits holds the B = m / 32 blocks of 128 bytes, the local
# payload after the births byte for byte: lane p of a block is the u32
# little-endian at byte 4p, lane p of every block together is physical
# slice p, lanes S..31 stay zero.  ARGV[1..8] as for layout 0 (ARGV[2] = 4m
# bytes); ARGV[9] = per key 4 + S bytes: the u32 little-endian byte offset of
# its block (128 * mulhi(h, B)), then one byte per lane p < S, the key's bit
# in lane p (bk_sliding_lane_pos: 0..31).  The client computes both (it
# knows B; the ring position it cannot know, so it sends every lane).
#
# Per key the script reads the block's S lanes with ONE GETRANGE (they are
# one 4S-byte string) and tests bits in Lua arithmetic (x % 2^(j+1) >= 2^j:
# no bit library call); an add writes the lanes back with ONE SETRANGE when
# a young bit was 0.  Two commands a key, against layout 0's BITFIELD of k
# offsets plus a GETBIT per probe of the query.  The query is the run test
# of bk_sliding_blocked_run (k consecutive ages set among [skip, S)) by the
# checkpoint scan of layout 0 (_LUA_SLIDING_RUN): a function of the same
# bits, so the same answer.  A shift clears lane p of every block: B
# 4-byte SETRANGEs (bk_sliding_blocked_clear_lane), about 0.5 a key added
# (B / G = 22.2 l / 1024 at 1%); min(n, S) >= S lanes: the whole string.
_LUA_SLIDING_BLOCKED_KEY = """
-- Functions as locals: a global (string.sub) costs about 1.5 us a lookup
-- through the script's protected globals, a local 35 ns (measured here).
local rc, sb, su, sc, up = redis.call, string.byte, struct.unpack, string.char, unpack
local W1 = 4 + S
local nkeys = #rec / W1
local P2 = {}
for j = 0, 8 do P2[j] = 2 ^ j end
local P2L = {}  -- bit j of a lane (a u32 value)
for j = 0, 31 do P2L[j] = 2 ^ j end
local K = KEYS[1]
local blk, i0, r  -- the key's S lanes (a 4S-byte string), its record, the ring position
-- the key's bit at age a (0 or 1): lane (r - a) mod S
local function bit(a)
  local p = r - a
  if p < 0 then p = p + S end
  local j = sb(rec, i0 + 4 + p)
  local e = P2[j % 8]
  if sb(blk, 4 * p + (j - j % 8) / 8 + 1) % (e + e) >= e then return 1 end
  return 0
end
-- record j: read its block's S lanes; returns the block's byte offset
local function load(j)
  i0 = (j - 1) * W1 + 1
  local off = su('<I4', rec, i0)
  blk = rc('GETRANGE', K, off, off + 4 * S - 1)
  return off
end
"""

_LUA_SLIDING_ADD_BLOCKED = _LUA_SLIDING_HEAD + _LUA_SLIDING_RUN + _LUA_SLIDING_BLOCKED_KEY + """
local function fmt(x) return string.format('%d', x) end
local LEN = tonumber(ARGV[2])
local B = LEN / 128
local ZERO4 = '\\0\\0\\0\\0'
local ss, tc = string.sub, table.concat
-- zero the given lanes of every block: per window of 512 blocks (64 KiB)
-- one GETRANGE, the window rebuilt around 4 zero bytes a lane, one
-- SETRANGE (a SETRANGE a block and lane cost 7x more, measured)
local function clear_lanes(lanes)
  table.sort(lanes)
  for w0 = 0, B - 1, 512 do
    local nb = math.min(512, B - w0)
    local data = rc('GETRANGE', K, 128 * w0, 128 * (w0 + nb) - 1)
    local parts, n, pos = {}, 0, 1
    for b = 0, nb - 1 do
      for i = 1, #lanes do
        local at0 = 128 * b + 4 * lanes[i] + 1
        parts[n + 1] = ss(data, pos, at0 - 1)
        parts[n + 2] = ZERO4
        n = n + 2
        pos = at0 + 4
      end
    end
    parts[n + 1] = ss(data, pos)
    rc('SETRANGE', K, 128 * w0, tc(parts))
  end
end
-- '<I4I4..' of n lanes (set_lanes)
local FL = {}
for n = 1, S do FL[n] = '<' .. string.rep('I4', n) end
local sp = struct.pack
-- move to generation g + n: clear the min(n, S) lanes that become the
-- youngest, the j-th born at birth0 + j * step (bk_sliding_shift_by)
local function shift_by(n, birth0, step)
  local first = 1
  if n > S then first = n - S + 1 end
  local hs, lanes = {}, {}
  for j = first, n do
    local p = (g + j) % S
    lanes[#lanes + 1] = p
    hs[#hs + 1] = 'b' .. p
    hs[#hs + 1] = fmt(ins) .. ' ' .. fmt(birth0 + j * step)
  end
  if #lanes >= S then  -- every lane: the whole string (lanes S..31 are zero)
    rc('DEL', K)
    rc('SETRANGE', K, LEN - 1, '\\0')
  else
    clear_lanes(lanes)
  end
  rc('HSET', KEYS[2], up(hs))
  g = g + n
  c = 0
end
-- set the key's bit in lanes lo .. hi (lo <= hi) of its block: one SETRANGE
-- of those lanes' 4 (hi - lo + 1) bytes
local function set_lanes(off, lo, hi)
  local n = hi - lo + 1
  local t = {su(FL[n], blk, 4 * lo + 1)}
  local js = {sb(rec, i0 + 4 + lo, i0 + 4 + hi)}
  for i = 1, n do
    local e = P2L[js[i]]
    local x = t[i]
    if x % (e + e) < e then t[i] = x + e end
  end
  rc('SETRANGE', K, off + 4 * lo, sp(FL[n], up(t, 1, n)))
end
if pending > 0 then
  shift_by(pending, start, D)
  start = start + pending * D
end
local out = {}
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
  r = g % S
  local off = load(j)
  local young = true  -- ages 0 .. k-1 all hold the key's bit: present, no change
  for a = 0, k - 1 do
    if bit(a) == 0 then young = false; break end
  end
  if young then
    out[j] = '0'
  else
    if run_at(bit, 0) then out[j] = '0' else out[j] = '1' end  -- before the insert
    -- the k youngest lanes are r-k+1 .. r, mod S: one range, or two
    local lo = r - k + 1
    if lo >= 0 then
      set_lanes(off, lo, r)
    else
      set_lanes(off, 0, r)
      set_lanes(off, lo + S, S - 1)
    end
    c = c + 1
    ins = ins + 1
  end
end
rc('HSET', KEYS[2], 'g', fmt(g), 'r', fmt(g % S), 'c', fmt(c), 'inserted', fmt(ins),
   'start', fmt(start), 'early', fmt(early))
return {table.concat(out), fmt(early), fmt(g), 0, 0, rc('HGET', KEYS[2], 'clears') or '0'}
"""

# contains (layout 1): writes nothing; the query at effective generation
# g + pending with the pending youngest ages empty (bk_sliding_contains).
_LUA_SLIDING_CONTAINS_BLOCKED = (_LUA_SLIDING_HEAD + _LUA_SLIDING_RUN
                                 + _LUA_SLIDING_BLOCKED_KEY + """
if pending >= S then return string.rep('0', nkeys) end
r = (g + pending) % S
local out = {}
for j = 1, nkeys do
  load(j)
  if run_at(bit, pending) then out[j] = '1' else out[j] = '0' end
end
return table.concat(out)
""")

# create: (re)initialise the slices and the state.  ARGV[1] = gen, ARGV[2] =
# length, ARGV[3..] = field, value pairs of the state hash.
_LUA_SLIDING_INIT = """
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SETRANGE', KEYS[1], tonumber(ARGV[2]) - 1, '\\0')
redis.call('HSET', KEYS[2], 'gen', ARGV[1], unpack(ARGV, 3))
return 1
"""

SLIDING_CONTAINS = Script(_LUA_SLIDING_CONTAINS.replace("@LAYOUT@", "0"))
SLIDING_CONTAINS_BLOCKED = Script(_LUA_SLIDING_CONTAINS_BLOCKED.replace("@LAYOUT@", "1"))
SLIDING_ADD_BLOCKED = Script(_LUA_SLIDING_ADD_BLOCKED.replace("@LAYOUT@", "1"))
SLIDING_INIT = Script(_LUA_SLIDING_INIT)
SCRIPTS.update({s.sha: s.body for s in (SLIDING_CONTAINS, SLIDING_CONTAINS_BLOCKED,
                                         SLIDING_ADD_BLOCKED, SLIDING_INIT)})
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
    return (_LUA_SLIDING_ADD.replace("@LAYOUT@", "0")
            .replace("@PATTERN@", " +0*(%d+)" * (k + 2))
            .replace("@LOCALS@", ", ".join(names)).replace("@SET0@", set0)
            .replace("@SET1@", set1))


def sliding_add_script(k: int, layout_version: int = 0) -> Script:
    """The cached add script for k slices a key (registered for NOSCRIPT);
    layout 1 has one script for every k."""
    if layout_version == 1:
        return SLIDING_ADD_BLOCKED
    script = _SLIDING_ADD_SCRIPTS.get(k)
    if script is None:
        script = _SLIDING_ADD_SCRIPTS[k] = Script(_sliding_add_body(k))
        SCRIPTS[script.sha] = script.body
    return script


def sliding_contains_script(layout_version: int) -> Script:
    """The read-only query script of a layout."""
    return SLIDING_CONTAINS_BLOCKED if layout_version == 1 else SLIDING_CONTAINS
