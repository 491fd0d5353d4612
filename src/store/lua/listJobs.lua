#!lua flags=no-writes
--[[
  listJobs: a page of jobs in one state after a cursor, read atomically. The work is bounded by
  the page size whatever the position: the cursor is found by rank (ZCOUNT, then a binary search
  among jobs of equal score), never by skipping entries.

  KEYS: the partition keys (lib.lua).
  ARGV[2] state        'delayed' | 'ready' | 'active' | 'dead'
  ARGV[3] afterScore   integer score of the last job of the previous page, or '' for the first page
  ARGV[4] afterId      id of that job ('' for the first page)
  ARGV[5] limit        integer (bounded by the caller)
  Returns: { now, id1, record1, score1, lastError1, ... } in the state's order, which is the order
    of (score, id) with ids compared as bytes, as Redis orders a sorted set:
    delayed and ready: soonest due first, score = due time; active: soonest lease end first,
    score = lease deadline; dead: most recent first, score = dead-lettered at (reverse order).
    A job in the reply whose record is missing has record ''.
  Errors: none.
]]
local state, afterScore, afterId, limit = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local now = nowMs()
local key = (state == 'ready' or state == 'delayed') and dueKey or (state == 'active' and activeKey or deadKey)

-- a < b comparing bytes (Lua's own `<` follows the server's locale; Redis orders by memcmp).
local function bytesLess(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do -- ids are at most 200 bytes
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- How many members sort before the cursor (or before or at it, with `orAt`): the rank where the
-- members after it begin. Ties on the score are ordered by id, found by bisection (log2 steps).
local function rankOf(orAt)
  local lo = rcall('ZCOUNT', key, '-inf', '(' .. afterScore)
  local hi = rcall('ZCOUNT', key, '-inf', afterScore)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local member = rcall('ZRANGE', key, mid, mid)[1]
    if bytesLess(member, afterId) or (orAt and member == afterId) then lo = mid + 1 else hi = mid end
  end
  return lo
end

local page, reverse = {}, false
if state == 'dead' then
  -- Most recent first: the page is the `limit` members ranked just below the cursor.
  local stop = (afterScore == '' and rcall('ZCARD', key) or rankOf(false)) - 1
  if stop >= 0 then page = rcall('ZRANGE', key, math.max(0, stop - limit + 1), stop, 'WITHSCORES') end
  reverse = true
else
  local start = afterScore == '' and 0 or rankOf(true)
  -- Delayed jobs are the due set's members after the ready ones.
  if state == 'delayed' then start = math.max(start, rcall('ZCOUNT', key, '-inf', int(now))) end
  page = rcall('ZRANGE', key, start, start + limit - 1, 'WITHSCORES')
end

local out = { now }
local first, last, step = 1, #page - 1, 2
if reverse then first, last, step = #page - 1, 1, -2 end
for i = first, last, step do
  local id, score = page[i], page[i + 1]
  -- Ready jobs end where the due times pass now (the ascending page may run into delayed ones).
  if state == 'ready' and tonumber(score) > now then break end
  out[#out + 1] = id
  local rec = rcall('HGET', jobsKey, id)
  -- An active job's record does not count the delivery under way: its lease does (lib.lua).
  local lease = rec and state == 'active' and rcall('HGET', leasesKey, id)
  out[#out + 1] = lease and leasedRecord(rec, lease) or rec or ''
  out[#out + 1] = score
  out[#out + 1] = rcall('HGET', errorsKey, id) or ''
end
return out
