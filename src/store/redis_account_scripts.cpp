// The Lua scripts of the Redis tier's size account (redis_tier.h), run with EVAL. Every key a
// script touches shares one hash slot (one bucket's bookkeeping and its entries), so each runs
// atomically on one node of a cluster; keys of that slot that are migrating away are read with
// pcall and left alone, never mistaken for gone entries.
#include "store/redis_account_scripts.h"

namespace lazyattn::store {

// Accounts a written entry KEYS[1] of ARGV[1] bytes, last used ARGV[2], in the index KEYS[2],
// the byte counter KEYS[3] and the size table KEYS[4]. First checks the bookkeeping it reads
// (types, a counter that is a non-negative integer, index and sizes of one length; with
// ARGV[5] = 1 that the sizes sum to the counter): on garbage it deletes the three keys and
// returns {-1, why}; when one of them is gone whole (Redis evicted it) {-2, why}; either way for
// the caller to rebuild them. Then forgets indexed entries that are gone
// (the 8 oldest and 56 more from a rank drawn by ARGV[4] are checked), and past the cap
// ARGV[3] (0: none) deletes the least recently used (never KEYS[1]) down to 90%: an entry already
// gone is forgotten, not evicted. Returns {bytes held, entries evicted, entries forgotten}.
const char* const kAccountScript = R"lua(
local entry, index, counter, sizes = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local function kind(k) return redis.call('TYPE', k)['ok'] end
local function count(v) return #v <= 15 and string.match(v, '^%d+$') ~= nil end
local function shown(v) return string.format('%q', string.sub(v, 1, 24)) end
local function broken(why)
  redis.call('DEL', index, counter, sizes)
  return {-1, why}
end
local ti, tc, ts = kind(index), kind(counter), kind(sizes)
if ti ~= 'zset' and ti ~= 'none' then return broken('the index is a ' .. ti) end
if ts ~= 'hash' and ts ~= 'none' then return broken('the size table is a ' .. ts) end
if tc ~= 'string' and tc ~= 'none' then return broken('the byte counter is a ' .. tc) end
local total = 0
if tc == 'string' then
  local v = redis.call('GET', counter)
  if not count(v) then return broken('the byte counter holds ' .. shown(v)) end
  total = tonumber(v)
end
local n, h = redis.call('ZCARD', index), redis.call('HLEN', sizes)
-- ARGV[7] = 1: the writer saw this account hold bytes, so all three keys missing at once is
-- allkeys-lru having evicted them, not a new store (its entries must be adopted again).
local all_gone = n == 0 and h == 0 and tc == 'none' and ARGV[7] == '1'
if all_gone or (n == 0) ~= (h == 0) or (n > 0 and tc == 'none') or (n == 0 and total ~= 0) then
  redis.call('DEL', index, counter, sizes)  -- one of them evicted (allkeys-lru) or deleted whole
  return {-2, 'a bookkeeping key is gone'}
end
if n ~= h then return broken('the index lists ' .. n .. ' entries, the size table ' .. h) end
if ARGV[5] == '1' then
  local sum = 0
  for _, v in ipairs(redis.call('HVALS', sizes)) do
    if not count(v) then return broken('a size is ' .. shown(v)) end
    sum = sum + tonumber(v)
  end
  if sum ~= total then
    return broken(string.format('the byte counter holds %.0f, the sizes sum to %.0f', total, sum))
  end
end
local function size_of(m)
  local v = redis.call('HGET', sizes, m)
  if v and count(v) then return tonumber(v) end
  return nil
end
local old = 0
if redis.call('HEXISTS', sizes, entry) == 1 then old = size_of(entry) end
if old == nil then return broken('a size is garbage') end
total = total - old + tonumber(ARGV[1])
redis.call('HSET', sizes, entry, ARGV[1])
redis.call('ZADD', index, ARGV[2], entry)
local evicted, forgotten = 0, 0
-- Run through ASKING (ARGV[6] = 1), the slot is importing here: entries not moved yet read as
-- gone, so nothing is swept or evicted until the migration is over.
local importing = ARGV[6] == '1'
local function forget(m, s)
  redis.call('ZREM', index, m)
  redis.call('HDEL', sizes, m)
  total = total - s
end
local function sweep(from, len)
  for _, m in ipairs(redis.call('ZRANGE', index, from, from + len - 1)) do
    -- pcall: in a cluster, a key already migrated away is an error here, not a gone entry
    if m ~= entry and redis.pcall('EXISTS', m) == 0 then
      local s = size_of(m)
      if s == nil then return false end
      forget(m, s)
      forgotten = forgotten + 1
    end
  end
  return true
end
if not importing and not sweep(0, 8) then return broken('a size is garbage') end
local rest = redis.call('ZCARD', index) - 8
if rest > 0 and not importing then
  local from = tonumber(ARGV[4]) % rest
  if not sweep(8 + from, 56) then return broken('a size is garbage') end
  if from + 56 > rest and not sweep(8, from + 56 - rest) then return broken('a size is garbage') end
end
local cap = tonumber(ARGV[3])
if cap > 0 and total > cap and not importing then
  local target = math.floor(cap * 0.9)
  while total > target do
    local oldest = redis.call('ZRANGE', index, 0, 1)
    local victim = oldest[1]
    if victim == entry then victim = oldest[2] end
    if victim == nil then break end
    local s = size_of(victim)
    if s == nil then return broken('a size is garbage') end
    local deleted = redis.pcall('DEL', victim)
    if type(deleted) ~= 'number' then break end  -- migrating away (cluster): left for a later write
    if deleted == 1 then evicted = evicted + 1 else forgotten = forgotten + 1 end
    forget(victim, s)
  end
end
redis.call('SET', counter, string.format('%.0f', total))
return {total, evicted, forgotten}
)lua";

// A hit's use, in the GET's round trip: renews the entry KEYS[1]'s score (ARGV[1]) in the index
// KEYS[2] (and reads the counter KEYS[3] and sizes KEYS[4]), or, when the entry is gone, drops it
// from the account. Returns 1 when it forgot the entry. Changes nothing on bookkeeping it cannot read
// (a write finds and rebuilds it).
const char* const kTouchScript = R"lua(
if redis.call('EXISTS', KEYS[1]) == 1 then
  -- Every bookkeeping key used, so an allkeys-lru Redis finds them recently used, not idle.
  if redis.call('TYPE', KEYS[2])['ok'] == 'zset' then redis.call('ZADD', KEYS[2], 'XX', ARGV[1], KEYS[1]) end
  if redis.call('TYPE', KEYS[3])['ok'] == 'string' then redis.call('GET', KEYS[3]) end
  if redis.call('TYPE', KEYS[4])['ok'] == 'hash' then redis.call('HEXISTS', KEYS[4], KEYS[1]) end
  return 0
end
if redis.call('TYPE', KEYS[2])['ok'] ~= 'zset' or redis.call('TYPE', KEYS[4])['ok'] ~= 'hash' then return 0 end
local s = redis.call('HGET', KEYS[4], KEYS[1])
if not s then return 0 end
redis.call('DECRBY', KEYS[3], s)
redis.call('ZREM', KEYS[2], KEYS[1])
redis.call('HDEL', KEYS[4], KEYS[1])
return 1
)lua";

// The rebuild's step: adopts the string keys ARGV[2..] (found by SCAN) not yet in the size table
// KEYS[3] into the index KEYS[1] (scored by Redis's idle time before ARGV[1], the time now, where
// it tells) and the counter KEYS[2]. Returns how many it adopted.
const char* const kAdoptScript = R"lua(
local adopted, bytes = 0, 0
for i = 2, #ARGV do
  local k = ARGV[i]
  if k ~= KEYS[1] and k ~= KEYS[2] and k ~= KEYS[3] and redis.pcall('TYPE', k)['ok'] == 'string'
     and redis.call('HEXISTS', KEYS[3], k) == 0 then
    local size = redis.call('STRLEN', k)
    local score = tonumber(ARGV[1])
    local idle = redis.pcall('OBJECT', 'IDLETIME', k)
    if type(idle) == 'number' then score = score - idle * 1000000 end
    redis.call('HSET', KEYS[3], k, size)
    redis.call('ZADD', KEYS[1], score, k)
    bytes = bytes + size
    adopted = adopted + 1
  end
end
redis.call('INCRBY', KEYS[2], bytes)
return adopted
)lua";

}  // namespace lazyattn::store
