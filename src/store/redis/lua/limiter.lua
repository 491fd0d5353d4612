#!lua flags=allow-oom
--[[
  limiter: the queue-wide `rate` and `concurrency` limits (queue.setLimits), one place for all of a
  queue's partitions and processes: partition 0's slot. A claim of a limited queue is three calls:
  `acquire` grants tokens here, the partition's claim takes at most that many jobs (claim.lua
  refuses to claim without a grant while the queue is limited), `settle` gives back the tokens the
  claim did not use. A process that dies between the calls leaves tokens taken: the limit is then
  under-used for a while, never exceeded.

  KEYS: partition 0's keys (includes/keys.lua); `meta` holds the limits: `rateMax`, `ratePer` (ms),
        `concurrency`, `limitedAt` (the last time the limit held work back: an acquire granted
        nothing, or a claim used every token while it had asked for more) and
        `rateNext`, the pace of the rate limit (below).
  Reads:     none
  Writes:    meta, limiter:starts, limiter:slots
  Publishes: limiter:wake

  Rate is two rules. The log is the guarantee: no window of `ratePer` ms, wherever it lies, holds
  more than `rateMax` grants. The pace spreads them: grants are due one every ratePer / rateMax ms
  (`rateNext`: when the next one is), and grants missed while nobody asked are caught up for at most
  a fortieth of the window, all at once (so a window measured where the handlers start holds at
  most ~2.5% more than `rateMax`, even when such a bunch lands right after its edge).
  Without the pace, a full window's tokens would be granted in one burst as the window opens, and
  every later window would repeat the burst: the starts those tokens lead to, a few ms after each
  grant, could then put two bursts into one window measured at the handlers.
  KEYS[#KEYS - 1] starts  ZSET  grant member -> its time in the pace (ms): the grants of the last `ratePer` ms,
                              a sliding-window log (exact: no window, wherever it lies, holds more
                              than `rateMax` starts; a refilled bucket would let 2x through at an edge)
  KEYS[#KEYS]     slots   ZSET  member -> deadline (ms): the jobs holding a concurrency slot.
                              "<grant>.<n>" while a grant's claim travels, then "<partition>:<token>"
                              per claimed job, renewed with its lease and removed when it settles; a
                              slot whose holder died comes back when its deadline (the lease) passes.
  ARGV[2] op, ARGV[3] the limiter's wake channel (PUBLISHed when a full `slots` frees a slot:
          workers that a full concurrency refused sleep until then, they do not poll)

  Returns: per op, below.
  acquire ARGV[4] want, ARGV[5] leaseMs, ARGV[6] grant id (unique per claim; the same when a claim
          is resent after a lost reply: an acquire that finds its grant's members still held answers
          with them, granting nothing more, so a lost acquire reply costs no tokens)
    Returns { now, granted, retryAt, kinds, limitedAt }
      granted  tokens granted, 0..want; members "<grant>.1".."<grant>.<granted>" hold them
      retryAt  when a token may be free again (ms) if granted < want: the oldest start leaving the
               window, or the earliest slot deadline (a freed slot also PUBLISHes); -1 otherwise
      kinds    which limits the queue has: 1 rate, 2 concurrency (sum); 0 = none, all was granted
      limitedAt the last time the limit held work back (this call's `now` if it granted nothing), or -1
  settle  ARGV[4] grant id, ARGV[5] granted, ARGV[6] used, ARGV[7] deadline (ms), ARGV[8] wanted
          (what the acquire asked for), ARGV[9..] the members "<partition>:<token>" of the jobs
          the claim took (`used` of them). Safe to resend (a resend after a lost reply finds the
          grant's members gone and the jobs' slots in place).
    Returns { missing1, ... }  0-based positions of the members that hold no slot after the call:
          the grant's slots ran out (its lease) and were taken back before it settled. Those jobs
          must not start (the caller hands them back): they would run beyond the limit.
  free    ARGV[4..] members whose jobs settled (acked, failed, handed back)
  renew   ARGV[4] leaseMs, ARGV[5..] members whose leases were renewed: their deadline becomes
          now + leaseMs (ZADD XX: a slot that was freed or ran out meanwhile is not brought back)
  read    Returns { rateMax, ratePer, concurrency, expireAfter } of `meta` (false where unset)
  configure  (queue.setLimits) on any partition, without the two limiter keys but on partition 0:
          ARGV[4] '1' on partition 0 (with the limiter keys), ARGV[5..] pairs field, value of `meta`
          to write ('' deletes the field). On partition 0, a
          cleared `rateMax` drops `starts` and a cleared `concurrency` drops `slots` (a limit set
          again later counts from then on).
  Errors: none.
]]
-- includes: keys, base, limiterSlots
local op = ARGV[2]
local limiterWake = ARGV[3]
local startsKey, slotsKey = KEYS[#KEYS - 1], KEYS[#KEYS]
local now = nowMs()

if op == 'configure' then
  local withLimiter = ARGV[4] == '1'
  for i = 5, #ARGV, 2 do
    local field, value = ARGV[i], ARGV[i + 1]
    if value == '' then
      rcall('HDEL', metaKey, field)
      if withLimiter and field == 'rateMax' then
        rcall('DEL', startsKey)
        rcall('HDEL', metaKey, 'rateNext')
      end
      if withLimiter and field == 'concurrency' then rcall('DEL', slotsKey) end
    else
      rcall('HSET', metaKey, field, value)
    end
  end
  return 0
end

if op == 'acquire' then
  local want, leaseMs, grant = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
  local limits = rcall('HMGET', metaKey, 'rateMax', 'ratePer', 'concurrency', 'limitedAt')
  local rateMax, ratePer, concurrency = tonumber(limits[1]), tonumber(limits[2]), tonumber(limits[3])
  local kinds = (rateMax and 1 or 0) + (concurrency and 2 or 0)
  -- Each limit grants what it has room for now; the grant is the least of them. When the caller
  -- gets fewer than it asked for, retryAt is when every limit that ran out has room again.
  -- Sent again (its reply was lost): the tokens the first send took, still held, are the grant,
  -- all of them (also beyond a smaller `want` now: the claim hands back jobs it has no room for,
  -- and the settle frees every member of the grant). A claim takes at most 1,000 jobs.
  local heldKey = (concurrency and slotsKey) or (rateMax and startsKey)
  if heldKey and rcall('ZSCORE', heldKey, grant .. '.1') then
    local held = 1
    while held < 1000 and rcall('ZSCORE', heldKey, grant .. '.' .. (held + 1)) do held = held + 1 end
    return { now, held, -1, kinds, tonumber(limits[4]) or -1 }
  end
  local free, retryAt = want, -1
  local paceFrom, interval, logRoom, slotRoom
  if rateMax then
    -- A start at t counts in every window (now - ratePer, now]: those at or before now - ratePer are out.
    rcall('ZREMRANGEBYSCORE', startsKey, '-inf', now - ratePer)
    logRoom = math.max(rateMax - rcall('ZCARD', startsKey), 0)
    free = math.min(free, logRoom)
    interval = ratePer / rateMax
    paceFrom = math.max(tonumber(rcall('HGET', metaKey, 'rateNext')) or 0, now - ratePer / 40)
    free = math.min(free, paceFrom <= now and math.floor((now - paceFrom) / interval) + 1 or 0)
  end
  if concurrency then
    rcall('ZREMRANGEBYSCORE', slotsKey, '-inf', now)
    slotRoom = math.max(concurrency - rcall('ZCARD', slotsKey), 0)
    free = math.min(free, slotRoom)
  end
  if free < want and kinds > 0 then
    if rateMax then
      -- The pace's next grant after this one, and, if this one fills the log, its oldest entry's leaving.
      retryAt = math.ceil(paceFrom + free * interval)
      if logRoom - free <= 0 then
        local oldest = rcall('ZRANGE', startsKey, '0', '0', 'WITHSCORES')[2]
        -- (this grant's first entry, if the log was empty)
        local at = (oldest and tonumber(oldest) or math.floor(paceFrom)) + ratePer
        if at > retryAt then retryAt = at end
      end
    end
    if concurrency and slotRoom - free <= 0 then
      -- The first slot's lease ends, or a second from now: a freed slot's message is the wake-up, and
      -- this bounds the wait should one be missed.
      local first = rcall('ZRANGE', slotsKey, '0', '0', 'WITHSCORES')[2]
      local at = math.min(first and tonumber(first) or now, now + 1000)
      if at > retryAt then retryAt = at end
    end
  end
  if free > 0 and kinds > 0 then
    local starts, slots = {}, {}
    for i = 1, free do
      local member = grant .. '.' .. i
      -- A start is logged at its time in the pace (a grant caught up lies in the recent past).
      starts[2 * i - 1], starts[2 * i] = paceFrom and math.floor(paceFrom + (i - 1) * interval) or now, member
      slots[2 * i - 1], slots[2 * i] = now + leaseMs, member
    end
    if rateMax then
      zaddMany(startsKey, starts)
      rcall('HSET', metaKey, 'rateNext', tostring(paceFrom + free * interval))
    end
    if concurrency then zaddMany(slotsKey, slots) end
  end
  local limitedAt = tonumber(limits[4]) or -1
  -- Nothing granted to a caller that expects due work (it asks only then): the limit holds it back.
  if free == 0 and want > 0 and kinds > 0 then
    limitedAt = now
    rcall('HSET', metaKey, 'limitedAt', now)
  end
  return { now, free, retryAt, kinds, limitedAt }
end

if op == 'settle' then
  local grant, granted, used, deadline, wanted = ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7], tonumber(ARGV[8])
  -- Every token used while more were asked for: more was due than the limit let through.
  if used == granted and granted < wanted then rcall('HSET', metaKey, 'limitedAt', now) end
  -- The starts of the tokens not used leave the window (any of the grant's members: they are alike).
  local unused = {}
  for i = used + 1, granted do unused[#unused + 1] = grant .. '.' .. i end
  if #unused > 0 and callMany('ZREM', startsKey, unused) > 0 then
    -- And the pace takes them back (another grant may have gone on from them: the log still holds).
    local limits = rcall('HMGET', metaKey, 'rateMax', 'ratePer', 'rateNext')
    if limits[1] and limits[3] then
      rcall('HSET', metaKey, 'rateNext', tostring(tonumber(limits[3]) - #unused * tonumber(limits[2]) / tonumber(limits[1])))
    end
  end
  -- The grant's slots become the claimed jobs' slots.
  local reserved = {}
  for i = 1, granted do reserved[i] = grant .. '.' .. i end
  local removed = callMany('ZREM', slotsKey, reserved)
  if removed > 0 and used > 0 then
    local slots = {}
    for i = 1, used do
      slots[2 * i - 1], slots[2 * i] = deadline, ARGV[8 + i]
    end
    zaddMany(slotsKey, slots)
  end
  -- Slots given back may be what a worker refused by a full concurrency sleeps for (one refused by
  -- the rate wakes by itself when its token is due).
  if removed > used and (tonumber(rcall('HGET', metaKey, 'limitedAt')) or 0) > now - 1000 then rcall('PUBLISH', limiterWake, now) end
  -- Without a concurrency limit no job needs a slot.
  local missing = {}
  if rcall('HEXISTS', metaKey, 'concurrency') == 1 then
    for i = 1, used do
      if not rcall('ZSCORE', slotsKey, ARGV[8 + i]) then missing[#missing + 1] = i - 1 end
    end
  end
  return missing
end

if op == 'free' then
  local members = {}
  for i = 4, #ARGV do members[#members + 1] = ARGV[i] end
  return freeSlots(slotsKey, members, limiterWake, now)
end

if op == 'read' then
  return rcall('HMGET', metaKey, 'rateMax', 'ratePer', 'concurrency', 'expireAfter')
end

if op == 'renew' then
  local deadline = now + tonumber(ARGV[4])
  local pairs = {}
  for i = 5, #ARGV do
    pairs[#pairs + 1] = deadline
    pairs[#pairs + 1] = ARGV[i]
  end
  for i = 1, #pairs, 1000 do rcall('ZADD', slotsKey, 'XX', unpack(pairs, i, math.min(i + 999, #pairs))) end
  return 0
end

return redis.error_reply('ERR unknown limiter op ' .. tostring(op))
