#!lua flags=no-writes
--[[
  listJobs: a page of jobs in one state after a cursor, read atomically. The work is bounded by
  the page size whatever the position: the cursor is found by rank (ZCOUNT, then a binary search
  among jobs of equal score), never by skipping entries.

  KEYS: the partition keys (includes/keys.lua).
  Reads:     due, active, dead, jobs, errors, meta, leases, wheel, wheel:<n>, expiry, completed,
             results, group:due
  Writes:    none
  ARGV[2] state        'delayed' | 'ready' | 'active' | 'dead' | 'completed'
  ARGV[3] afterScore   integer score of the last job of the previous page, or '' for the first page
  ARGV[4] afterId      id of that job ('' for the first page)
  ARGV[5] limit        integer (bounded by the caller)
  Returns: { now, id1, record1, score1, lastError1, expiry1, ... } in the state's order, which is the order
    of (score, id) with ids compared as bytes, as Redis orders a sorted set:
    delayed and ready: soonest due first, score = due time; active: soonest lease end first,
    score = lease deadline; dead: most recent first, score = dead-lettered at (reverse order);
    completed: most recent first, score = finished at, record = its `results` value
    "<result JSON>\n<record>", only while the queue retains completed jobs and only those not older
    than the retention's age (includes/retention.lua).
    A job in the reply whose record is missing has record ''. `expiry` is a waiting job's
    `expiry` entry (includes/keys.lua, "Deadlines"), else ''.
    Delayed and ready include the jobs in the wheel, merged in that same exact order (a wheel job
    is 'ready' once its due time passed and no claim has moved its bucket yet). The wheel's part
    of a page is read bucket start by bucket start from the cursor on (and the few earlier
    buckets that may reach past it: a slot's sub 0 per power of two, the cells of the W before
    it), until the page is full or past the last `due` entry of a full `due` page. A slot holds
    WHEEL_BUCKET_MAX jobs in its sub 0 and the rest in cells of its due times (includes/wheel.lua), so the
    cost is the page plus a few thousand entries, however many jobs one slot holds (more only
    where more than 1,000 jobs share one fine cell, 60 ms by default: its buckets are read).
  Errors: none.
]]
-- includes: keys, base, leases, retention, wheel, wheelViews
local state, afterScore, afterId, limit = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local now = nowMs()
local key = (state == 'ready' or state == 'delayed') and dueKey or (state == 'active' and activeKey or deadKey)
local records = jobsKey
-- Completed: the oldest finishedAt shown (nil: any).
local keptFrom = nil
if state == 'completed' then
  local retain = readRetain(rcall('HGET', metaKey, 'retain'))
  if not retain then return { now } end
  key, records = completedKey, resultsKey
  keptFrom = retain.age and now - retain.age or nil
end

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
local function rankOf(orAt, key)
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
if state == 'dead' or state == 'completed' then
  -- Most recent first: the page is the `limit` members ranked just below the cursor.
  local stop = (afterScore == '' and rcall('ZCARD', key) or rankOf(false, key)) - 1
  if stop >= 0 then page = rcall('ZRANGE', key, math.max(0, stop - limit + 1), stop, 'WITHSCORES') end
  reverse = true
else
  local function pageOf(key)
    local start = afterScore == '' and 0 or rankOf(true, key)
    -- Delayed jobs are the due set's members after the ready ones.
    if state == 'delayed' then start = math.max(start, rcall('ZCOUNT', key, '-inf', int(now))) end
    return rcall('ZRANGE', key, start, start + limit - 1, 'WITHSCORES')
  end
  page = pageOf(key)
  -- Grouped waiting jobs are in `group:due` (includes/groups.lua): its page merged in, in the same
  -- (score, id) order.
  if key == dueKey and rcall('EXISTS', groupDueKey) == 1 then
    local other = pageOf(groupDueKey)
    if #other > 0 then
      local merged = {}
      for i = 1, #page, 2 do merged[#merged + 1] = { page[i], tonumber(page[i + 1]) } end
      for i = 1, #other, 2 do merged[#merged + 1] = { other[i], tonumber(other[i + 1]) } end
      table.sort(merged, function(x, y)
        if x[2] ~= y[2] then return x[2] < y[2] end
        return bytesLess(x[1], y[1])
      end)
      page = {}
      for i = 1, math.min(#merged, limit) do
        page[#page + 1] = merged[i][1]
        page[#page + 1] = merged[i][2]
      end
    end
  end
end

-- The page's entries { id, at, record | nil (read from `jobs`) } in the state's order.
local rows = {}
local first, last, step = 1, #page - 1, 2
if reverse then first, last, step = #page - 1, 1, -2 end
for i = first, last, step do
  local id, score = page[i], page[i + 1]
  -- Ready jobs end where the due times pass now (the ascending page may run into delayed ones).
  if state == 'ready' and tonumber(score) > now then break end
  -- Completed jobs older than the retention's age, not trimmed yet (no ack since), are not shown.
  if keptFrom and tonumber(score) < keptFrom then break end
  rows[#rows + 1] = { id, tonumber(score) }
end

local function byTimeThenId(a, b)
  if a[2] ~= b[2] then return a[2] < b[2] end
  return bytesLess(a[1], b[1])
end

-- Jobs in the wheel whose (due time, id) comes after the cursor and within the state's due times:
-- at least the first `limit` of them in that order (when there are so many), and every one due
-- at or before the last of those. First the few buckets starting before the least due time the
-- page may hold that may reach past it: the slot buckets of its slot and of the earlier slots
-- whose span may reach into it (wheelSpanOf), and the cells (at most W wide) of the W before it;
-- then bucket start after bucket start until the next one is after the `limit`-th job taken, or
-- after `maxAt`.
local function wheelRows(maxAt)
  local w = wheelWidth()
  local after = afterScore ~= '' and tonumber(afterScore) or nil
  local minAt = state == 'delayed' and now + 1 or nil -- the least due time the state may hold
  if after and (minAt == nil or after > minAt) then minAt = after end
  local taken, seen = {}, {}
  local function takeBucket(n, start)
    local entries = rcall('LRANGE', wheelBucketKey(n), 0, -1)
    for k = 1, #entries do
      local e = entries[k]
      local at, nl1, nl2 = wheelEntryDue(e, start)
      local id = string.sub(e, 1, nl1 - 1)
      local fits = (state == 'ready' and at <= now) or (state == 'delayed' and at > now)
      if fits and after and (at < after or (at == after and not bytesLess(afterId, id))) then fits = false end
      if fits then taken[#taken + 1] = { id, at, string.sub(e, nl2 + 1) } end
    end
  end
  -- Every bucket starting at `start` (a slot's subs, cells beginning there), once.
  local function takeStart(start)
    if seen[start] then return end
    seen[start] = true
    local buckets = rcall('ZRANGEBYSCORE', wheelKey, start, start)
    for b = 1, #buckets do takeBucket(buckets[b], start) end
  end
  local from = '-inf'
  if minAt then
    local m = math.floor(minAt / w)
    if m * w < minAt then takeStart(m * w) end
    -- A bucket of slot s < m spanning k slots reaches slot m only if s is the multiple of k
    -- just below m: one candidate per power of two.
    local prev, k = m, 2
    while k <= wheelSpanOf(0) do -- slot 0 is a multiple of every k: the cap
      local s = math.floor(m / k) * k
      if s ~= prev then
        if s + wheelSpanOf(s) > m then takeStart(s * w) end
        prev = s
      end
      k = 2 * k
    end
    -- Cells that begin in the W before minAt and end after it (their names say where they end).
    local near = rcall('ZRANGEBYSCORE', wheelKey, '(' .. int(minAt - w), '(' .. int(minAt), 'WITHSCORES')
    for i = 1, #near, 2 do
      local start = tonumber(near[i + 1])
      if not seen[start] then
        local stop, cell = wheelBucketEnd(near[i], start)
        if cell and stop > minAt then takeBucket(near[i], start) end
      end
    end
    from = int(minAt)
  end
  while true do
    local head = rcall('ZRANGEBYSCORE', wheelKey, from, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    if head[1] == nil then break end
    local start = tonumber(head[2])
    if maxAt and start > maxAt then break end
    if #taken >= limit then
      -- Only the first `limit` can be on the page; a slot starting after the last of them adds none.
      table.sort(taken, byTimeThenId)
      for i = #taken, limit + 1, -1 do taken[i] = nil end
      if taken[limit][2] < start then break end
    end
    takeStart(start)
    from = '(' .. int(start)
  end
  return taken
end

if (state == 'ready' or state == 'delayed') and rcall('EXISTS', wheelKey) == 1 then
  -- Ready jobs are due by now; a full `due` page ends the page at its last due time at the latest.
  local maxAt = state == 'ready' and now or nil
  if #rows >= limit then maxAt = rows[#rows][2] end
  local wheel = wheelRows(maxAt)
  if #wheel > 0 then
    for i = 1, #wheel do rows[#rows + 1] = wheel[i] end
    table.sort(rows, byTimeThenId)
  end
end

-- Deadlines of waiting jobs (includes/keys.lua, "Deadlines"): one HMGET for the page, none when the
-- partition has no `expiry` entry.
local expiries = {}
if (state == 'ready' or state == 'delayed') and rcall('EXISTS', expiryKey) == 1 then
  local ids = {}
  for i = 1, math.min(#rows, limit) do ids[i] = rows[i][1] end
  expiries = hmgetMany(expiryKey, ids)
end

local out = { now }
for i = 1, math.min(#rows, limit) do
  local id = rows[i][1]
  out[#out + 1] = id
  local rec = rows[i][3] or rcall('HGET', records, id)
  -- An active job's record does not count the delivery under way: its lease does (includes/leases.lua).
  local lease = rec and state == 'active' and rcall('HGET', leasesKey, id)
  out[#out + 1] = lease and leasedRecord(rec, lease) or rec or ''
  out[#out + 1] = int(rows[i][2])
  out[#out + 1] = rcall('HGET', errorsKey, id) or ''
  out[#out + 1] = expiries[i] or ''
end
return out
