--[[
  groups: fair delivery per group, per-group limits and order (queue.add(payload, { group })).

  Where a grouped job waits. A job added with a group lives in the partition its group's name
  hashes to (src/store/placement.ts), so a group's queue, limits and order are local to one slot.
  Its record carries the group as a line between the header and the payload,
  "<header>\n\31<group>\n<payload JSON>" (the payload JSON never starts with \31, and a group holds
  no control character): the scripts that rewrite a record carry it along inside `payload`
  (records.lua), and only the scripts that place or count a job read it (recordGroup). Waiting in
  the due tier, it is in its group's queue `group:q:<group>` (ZSET id -> dueAt, a key built here
  under the partition's hash tag) and in `group:due` (all grouped waiting jobs of the partition:
  what counts, lists and look-ups by id read), not in `due`; far in the future it is in the wheel
  like any job, and the wheel's promotion puts it into its group's queue. Active, its lease is
  "<token>,<dueAt>,<group>" (leases.lua): ack, fail, release and reaping know its group without
  reading its record. Jobs without a group are the default group, in `due`, as in a partition
  without groups.

  Invariant (with keys.lua's): a grouped job is in exactly one of its group's queue (and then in
  `group:due` with the same score), `active`, `dead`, a wheel bucket or `completed`.
  `group:jobs` counts each group's jobs that are waiting or active (a group leaves it at 0);
  `group:active` each group's active jobs.

  Whose turn. `groups` (KEYS[17]) holds the groups a claim may serve. A score below TURN_LIMIT is a
  turn: the group has due work, and the claim serves the lowest turns first, then puts each group
  it served at the end of the line (a new, higher turn): round-robin over the groups with due work,
  the same share for each. A score at or above TURN_LIMIT is a time (ms): when the group may have
  due work again (its head falls due, its rate window reopens, its in-order retry is due); the claim
  turns the groups whose time came into turns (at the end of the line, a bounded number per call).
  Writers of a group's queue only lower its time (ZADD LT: a turn, lower than any time, stays), so
  an entry is never later than the group's work; it may be early or stale (a cancelled head, a
  group that became held), and the claim that meets it puts it right. The default group ('') has
  an entry only while the partition has other groups: the claim adds it when `due` has due jobs.
  A group is out of `groups` while it is paused (`p:<group>`), held by its concurrency limit
  (`h:<group>`: the settle that frees a slot puts it back), or has nothing waiting.

  Limits. `meta` `groupLimits` is the default of every group, "<concurrency>,<rateMax>,<ratePer>"
  (empty fields: no such limit), written to every partition; `l:<group>` a group's own. They bind
  only named groups (the default group follows the queue's own limits only). Concurrency counts
  `group:active`. Rate is a sliding-window log per group, `group:r:<group>` (ZSET token -> claimed
  at, expiring with the window): no window of ratePer ms, on the server's clock, holds more than
  rateMax claims of the group; and a pace: claims one every ratePer / rateMax, at most a fortieth of
  the window (and at least one) caught up at once, as the queue's limiter does (limiter.lua).

  In order. A group whose concurrency is 1 runs one job at a time in due order, ties in the order
  the jobs were added (groupFlush, TIE_STEP). A retry of its running job keeps its place at the front: fail.lua records it in
  `b:<group>`, and the group starts nothing else until that job has started again (or left the
  group: cancelled, rescheduled away, dead-lettered by hand).

  Work per claim: the groups it serves (at most `limit`) and the groups whose time came (at most
  GROUP_PROMOTE_MAX), never the number of groups or of jobs in a group.
]]
-- includes: keys, base

-- Scores below are turns, at or above are times (epoch ms; every time since 2001 is above).
local TURN_LIMIT = 1000000000000
local TURN_LIMIT_TEXT = '1000000000000'
-- The waiting groups a claim turns into turns at most (their time came).
local GROUP_PROMOTE_MAX = 1000
-- A group's turn is up to this many jobs (more when fewer groups have due work than the batch has
-- room for): round-robin with a quantum, as deficit round-robin does. Every group gets the same
-- share over a round; a claim serves a quarter as many groups as jobs, so the work per group
-- (its queue's pop, its counts) is spread over several jobs.
local GROUP_QUANTUM = 4
-- per call:
local groupTag = string.sub(dueKey, 1, -5)

local function groupQueueKey(g)
  return groupTag .. ':group:q:' .. g
end

local function groupRateKey(g)
  return groupTag .. ':group:r:' .. g
end

-- The storage format of group data (src/store/redis/partitions.ts STORAGE_FORMAT): a partition of
-- an older format becomes it when a script first writes group data there, so that a process that
-- knows only format 1 (and would leave grouped jobs undelivered) refuses the queue from its next start.
local GROUP_FORMAT = 2
local function markGroupFormat()
  local format = tonumber(rcall('HGET', metaKey, 'format')) or 1
  if format < GROUP_FORMAT then rcall('HSET', metaKey, 'format', GROUP_FORMAT) end
end

-- The group of a record, nil for a job without one.
local function recordGroup(rec)
  local nl = string.find(rec, '\n', 1, true)
  if not nl or string.byte(rec, nl + 1) ~= 31 then return nil end
  return string.sub(rec, nl + 2, string.find(rec, '\n', nl + 2, true) - 1)
end

-- The group of an add's payload argument ("\31<group>\n<payload JSON>"), nil for none.
local function payloadGroup(payload)
  if string.byte(payload, 1) ~= 31 then return nil end
  return string.sub(payload, 2, string.find(payload, '\n', 2, true) - 1)
end

-- The group of a lease, nil for a job without one.
local function leaseGroup(lease)
  local second = string.find(lease, ',', string.find(lease, ',', 1, true) + 1, true)
  return second and string.sub(lease, second + 1) or nil
end

-- Touches the computed group keys (a multi-key EXISTS with a declared key) before a script writes
-- anything that depends on them: while a Cluster slot migrates, a key of the slot that moved
-- already fails this read, which ends the script before it wrote (includes/wheel.lua, "Write order").
local function groupKeysHere(keys)
  keys[#keys + 1] = countersKey
  for i = 1, #keys, 1000 do rcall('EXISTS', unpack(keys, i, math.min(i + 999, #keys))) end
end

-- Touches the queue keys of the groups that `groupIn` reads from the entries of `list` (records or
-- leases; false entries skipped), each once, before a script puts their jobs back in their queues.
local function groupQueuesHere(list, groupIn)
  local keys, seen = {}, {}
  for i = 1, #list do
    local g = list[i] and groupIn(list[i])
    if g and not seen[g] then
      seen[g] = true
      keys[#keys + 1] = groupQueueKey(g)
    end
  end
  if #keys > 0 then groupKeysHere(keys) end
end

-- Touches the queue keys of the groups the leases name (takeLeases' beforeWrite): a script that
-- puts grouped jobs back into their queues fails, under a slot migration, before it took any lease.
local function groupLeaseKeysHere(leases)
  groupQueuesHere(leases, leaseGroup)
end

-- A group's count of waiting and active jobs (`group:jobs`) changes by `delta`.
local function groupCount(g, delta)
  if delta == 0 then return end
  if tonumber(rcall('ZINCRBY', groupJobsKey, delta, g)) <= 0 then rcall('ZREM', groupJobsKey, g) end
end

-- Limits "<concurrency>,<rateMax>,<ratePer>" as numbers (nil where none).
local function readGroupLimits(text)
  if not text then return nil, nil, nil end
  local c, m, p = string.match(text, '^(%d*),(%d*),(%d*)$')
  return tonumber(c), tonumber(m), tonumber(p)
end

-- The limits in force for group g: its own, else the partition's default (`meta` `groupLimits`).
local function groupLimitsOf(g)
  local own = rcall('HGET', groupStateKey, 'l:' .. g)
  return readGroupLimits(own or rcall('HGET', metaKey, 'groupLimits'))
end

-- Tells sleeping workers about a group that may have work at `at`, when nothing in `groups` comes
-- earlier (a group with a turn means workers are claiming already).
local function wakeIfGroupHead(at)
  local head = rcall('ZRANGE', groupsKey, 0, 0, 'WITHSCORES')
  if head[2] ~= nil and tonumber(head[2]) >= at then rcall('PUBLISH', wakeChannel, int(at)) end
end

--[[
  A batch of waiting jobs for their groups' queues: collect with groupAdd, write with groupFlush
  (every group key touched first, then one ZADD per group and one of `group:due`).
]]
local function groupBatch()
  return { order = {}, pairs = {}, min = {}, fresh = {}, all = {} }
end

-- Job `id`, due at `dueAt` (number), waits in group g; `fresh`: it is new to the group (counted).
local function groupAdd(batch, g, dueAt, id, fresh)
  local pairs = batch.pairs[g]
  if pairs == nil then
    pairs = {}
    batch.pairs[g] = pairs
    batch.order[#batch.order + 1] = g
    batch.fresh[g] = 0
  end
  pairs[#pairs + 1] = dueAt
  pairs[#pairs + 1] = id
  batch.all[#batch.all + 1] = dueAt
  batch.all[#batch.all + 1] = id
  if batch.min[g] == nil or dueAt < batch.min[g] then batch.min[g] = dueAt end
  if fresh then batch.fresh[g] = batch.fresh[g] + 1 end
end

-- Equal due times keep the order the jobs were added in: a group's queue scores a job dueAt plus a
-- fraction, TIE_STEP more than the last job of the group due in the same millisecond (a sorted set
-- would order them by id bytes). Exact in a double for due times before the year 2109 (42 bits of
-- integer leave 11 of fraction), so up to TIE_MAX jobs of one group due in one millisecond keep
-- their order; later ones share the last fraction (then by id). Counts, lists and look-ups read
-- `group:due`, whose scores are the plain due times; a claim reports the due time without it.
local TIE_STEP = 1 / 2048
local TIE_MAX = 2047 / 2048

-- Writes the batch; returns the earliest due time written (nil for none) for the caller's wake.
local function groupFlush(batch)
  if #batch.order == 0 then return nil end
  local keys = {}
  for i = 1, #batch.order do keys[i] = groupQueueKey(batch.order[i]) end
  groupKeysHere(keys)
  local earliest = nil
  for i = 1, #batch.order do
    local g = batch.order[i]
    local qkey = groupQueueKey(g)
    local pairs = batch.pairs[g]
    local lastOf = {} -- due time -> the fraction given last
    for k = 1, #pairs, 2 do
      local dueAt = pairs[k]
      local last = lastOf[dueAt]
      if last == nil then
        local top = rcall('ZREVRANGEBYSCORE', qkey, '(' .. int(dueAt + 1), int(dueAt), 'WITHSCORES', 'LIMIT', 0, 1)
        last = top[2] and tonumber(top[2]) - dueAt or -TIE_STEP
      end
      last = math.min(last + TIE_STEP, TIE_MAX)
      lastOf[dueAt] = last
      pairs[k] = string.format('%.17g', dueAt + last)
    end
    zaddMany(qkey, pairs)
    rcall('ZADD', groupsKey, 'LT', batch.min[g], g)
    groupCount(g, batch.fresh[g])
    if earliest == nil or batch.min[g] < earliest then earliest = batch.min[g] end
  end
  zaddMany(groupDueKey, batch.all)
  return earliest
end

-- A waiting grouped job leaves its group's queue (cancelled, replaced, moved to the wheel or
-- elsewhere); `gone`: it leaves the group's count too. Returns whether it was there.
local function groupUnwait(g, id, gone)
  local removed = rcall('ZREM', groupQueueKey(g), id) == 1
  rcall('ZREM', groupDueKey, id)
  if removed and gone then groupCount(g, -1) end
  return removed
end

-- Running jobs stopped: `counts[g]` of group g (acked, failed, reaped, handed back). A group held
-- by its concurrency limit gets its turn back at `now` (the claim that serves it checks again),
-- and sleeping workers are woken for it.
-- A few calls for the whole batch, whatever the number of groups (an ack of 50 jobs of 50 groups).
local function groupStopped(counts, order, now)
  if #order == 0 then return end
  local active = hmgetMany(groupActiveKey, order)
  local heldFields, heldNow = {}, {}
  -- Held groups have a flag in `group:state`: without the key, none is held.
  if rcall('EXISTS', groupStateKey) == 1 then
    for i = 1, #order do heldFields[i] = 'h:' .. order[i] end
    heldNow = hmgetMany(groupStateKey, heldFields)
  end
  local running, idle, freedFields, back = {}, {}, {}, {}
  for i = 1, #order do
    local g = order[i]
    local left = (tonumber(active[i]) or 0) - counts[g]
    if left > 0 then
      running[#running + 1] = g
      running[#running + 1] = left
    else
      idle[#idle + 1] = g
    end
    if heldNow[i] then
      freedFields[#freedFields + 1] = heldFields[i]
      back[#back + 1] = now
      back[#back + 1] = g
    end
  end
  if #running > 0 then callMany('HSET', groupActiveKey, running) end
  if #idle > 0 then callMany('HDEL', groupActiveKey, idle) end
  if #freedFields > 0 then
    callMany('HDEL', groupStateKey, freedFields)
    rcall('HINCRBY', countersKey, 'groupsHeld', -#freedFields)
    -- ZADD LT of many: each gets its turn back at `now` unless it has an earlier one.
    for i = 1, #back, 1000 do rcall('ZADD', groupsKey, 'LT', unpack(back, i, math.min(i + 999, #back))) end
    -- Workers that found only held groups sleep without a due time: tell them.
    rcall('PUBLISH', wakeChannel, int(now))
  end
end

-- The counts of waiting and active jobs (`group:jobs`) of many groups change: `deltas[g]` for each
-- g of `order` (one ZMSCORE, one ZADD, one ZREM for the batch).
local function groupCounts(deltas, order)
  if #order == 0 then return end
  local scores = {}
  for i = 1, #order, 1000 do
    local part = rcall('ZMSCORE', groupJobsKey, unpack(order, i, math.min(i + 999, #order)))
    for j = 1, #part do scores[#scores + 1] = part[j] end
  end
  local set, gone = {}, {}
  for i = 1, #order do
    local g = order[i]
    local n = (tonumber(scores[i]) or 0) + deltas[g]
    if n > 0 then
      set[#set + 1] = n
      set[#set + 1] = g
    else
      gone[#gone + 1] = g
    end
  end
  if #set > 0 then zaddMany(groupJobsKey, set) end
  if #gone > 0 then callMany('ZREM', groupJobsKey, gone) end
end

-- A counter of jobs by group, for groupStopped and groupCounts: tally.n[g], tally.order.
local function groupTally()
  return { order = {}, n = {} }
end

-- The jobs of a tally left their groups (completed, dead, cancelled, expired): counted down.
local function groupTallyLeft(t)
  local deltas = {}
  for i = 1, #t.order do deltas[t.order[i]] = -t.n[t.order[i]] end
  groupCounts(deltas, t.order)
end

local function groupTallyAdd(t, g)
  if t.n[g] == nil then
    t.n[g] = 0
    t.order[#t.order + 1] = g
  end
  t.n[g] = t.n[g] + 1
end

--[[
  The claim's choice of due jobs in a partition with groups. Turns the groups whose time came into
  turns, then serves the groups with the lowest turns: up to `limit` of them, each at most an equal
  share (ceil(limit / groups served)) and what its concurrency and rate leave room for, in due
  order within the group. A group served puts itself at the end of the line when it may have more
  due work; else it waits until its next due time, or leaves `groups` (empty, paused, held).
  Returns `due` (id, score, id, score...: the jobs taken out of their queues, as claim.lua's
  ZRANGEBYSCORE answers), `groupOf` (the group of each, false for the default group), `limitsOf`
  (group -> { concurrency, rateMax, ratePer } of the groups served) and whether groups with turns
  remain (the caller should come back at once).
]]
local function claimFromGroups(limit, now, nowDigits, defaultLimits)
  local waking = rcall('ZRANGEBYSCORE', groupsKey, TURN_LIMIT_TEXT, nowDigits, 'LIMIT', 0, GROUP_PROMOTE_MAX)
  local turn = 0
  local function nextTurns(n)
    local last = rcall('HINCRBY', metaKey, 'groupTurn', n)
    local first = last - n + 1
    if last >= TURN_LIMIT then
      -- Never in practice (a turn per claimed group); keep turns below times anyway.
      rcall('HSET', metaKey, 'groupTurn', n)
      first = 1
    end
    return first
  end
  -- Puts `list`'s groups at the end of the line, in order.
  local function giveTurns(list)
    if #list == 0 then return end
    local first = nextTurns(#list)
    local args = {}
    for i = 1, #list do
      args[2 * i - 1] = first + i - 1
      args[2 * i] = list[i]
    end
    zaddMany(groupsKey, args)
  end
  giveTurns(waking)
  local ready = rcall('ZRANGEBYSCORE', groupsKey, '-inf', '(' .. TURN_LIMIT_TEXT, 'LIMIT', 0, math.ceil(limit / GROUP_QUANTUM))
  local due, groupOf, limitsOf = {}, {}, {}
  if #ready == 0 then return due, groupOf, limitsOf, #waking == GROUP_PROMOTE_MAX end
  local share = math.ceil(limit / #ready)
  -- The named groups' state, batched: running counts, then p:, l:, b: of each; then their queue
  -- keys (and rate windows) are touched before anything of theirs is written.
  local names = {}
  for i = 1, #ready do
    if ready[i] ~= '' then names[#names + 1] = ready[i] end
  end
  local activeOf, stateOf = {}, {}
  -- The limits of a group without its own are the default: parsed once.
  local defaultConcurrency, defaultRateMax, defaultRatePer = readGroupLimits(defaultLimits)
  local function limitsIn(own)
    if own then return readGroupLimits(own) end
    return defaultConcurrency, defaultRateMax, defaultRatePer
  end
  if #names > 0 then
    local active = hmgetMany(groupActiveKey, names)
    -- Most partitions have no group with state of its own (no pause, limits, retry first): then
    -- no fields are built and nothing is read.
    local state = {}
    if rcall('EXISTS', groupStateKey) == 1 then
      local fields = {}
      for i = 1, #names do
        local g = names[i]
        fields[3 * i - 2] = 'p:' .. g
        fields[3 * i - 1] = 'l:' .. g
        fields[3 * i] = 'b:' .. g
      end
      state = hmgetMany(groupStateKey, fields)
    end
    local keys = {}
    local none = { false, false, false }
    for i = 1, #names do
      local g = names[i]
      activeOf[g] = tonumber(active[i]) or 0
      stateOf[g] = state[3 * i - 2] == nil and none or { state[3 * i - 2], state[3 * i - 1], state[3 * i] }
      keys[#keys + 1] = groupQueueKey(g)
      local _, rateMax = limitsIn(state[3 * i - 1])
      if rateMax then keys[#keys + 1] = groupRateKey(g) end
    end
    groupKeysHere(keys)
  end
  local left = limit
  local tail, waits, gone, held, taken = {}, {}, {}, {}, {}
  local served = 0
  for i = 1, #ready do
    if left == 0 then break end
    served = i
    local g = ready[i]
    local room = math.min(share, left)
    if g == '' then
      local got = rcall('ZRANGEBYSCORE', dueKey, '-inf', nowDigits, 'WITHSCORES', 'LIMIT', '0', room)
      local n = #got / 2
      if n > 0 then
        rcall('ZREMRANGEBYRANK', dueKey, '0', n <= 10 and DIGITS[n - 1] or n - 1)
        for k = 1, #got do due[#due + 1] = got[k] end
        for k = 1, n do groupOf[#groupOf + 1] = false end
      end
      if n == room then tail[#tail + 1] = g else gone[#gone + 1] = g end
      left = left - n
    else
      local st = stateOf[g]
      local concurrency, rateMax, ratePer = limitsIn(st[2])
      local active = activeOf[g]
      if st[1] then
        gone[#gone + 1] = g -- paused: resumeGroup puts it back
      elseif concurrency and active >= concurrency then
        held[#held + 1] = g
      else
        if concurrency then room = math.min(room, concurrency - active) end
        local waitUntil = nil
        if rateMax then
          -- The log (no window of ratePer holds more than rateMax claims) and the pace (claims one
          -- every ratePer / rateMax, at most a fortieth of the window caught up at once, as the
          -- queue's limiter: a window's claims in one burst would let two bursts, a few ms apart at
          -- the handlers, fall into one window).
          local rkey = groupRateKey(g)
          rcall('ZREMRANGEBYSCORE', rkey, '-inf', int(now - ratePer))
          local recent = rcall('ZCARD', rkey)
          local pace = ratePer / rateMax
          local allowed = math.min(rateMax - recent, math.max(1, math.floor(rateMax / 40)))
          if recent > 0 then
            local last = tonumber(rcall('ZRANGE', rkey, -1, -1, 'WITHSCORES')[2])
            allowed = math.min(allowed, math.floor((now - last) / pace))
            if allowed < 1 then waitUntil = math.ceil(last + pace) end
          end
          if recent >= rateMax then
            local oldest = tonumber(rcall('ZRANGE', rkey, 0, 0, 'WITHSCORES')[2])
            waitUntil = math.max(waitUntil or 0, oldest + ratePer)
          end
          if not waitUntil then room = math.min(room, allowed) end
        end
        local qkey = groupQueueKey(g)
        local got = nil
        if waitUntil then
          waits[#waits + 1] = waitUntil
          waits[#waits + 1] = g
        elseif st[3] then
          -- An in-order group's retry starts first: only it, once it is due.
          local at = rcall('ZSCORE', qkey, st[3])
          if not at then
            rcall('HDEL', groupStateKey, 'b:' .. g)
            tail[#tail + 1] = g -- the retry left the group: the others go on
          elseif tonumber(at) > now then
            waits[#waits + 1] = tonumber(at)
            waits[#waits + 1] = g
          else
            rcall('ZREM', qkey, st[3])
            rcall('HDEL', groupStateKey, 'b:' .. g)
            got = { st[3], at }
          end
        else
          got = rcall('ZPOPMIN', qkey, room)
          -- Jobs popped that are not due yet go back; the group waits for the first of them.
          local firstLater = nil
          for k = #got - 1, 1, -2 do
            if tonumber(got[k + 1]) > now then
              rcall('ZADD', qkey, got[k + 1], got[k])
              firstLater = tonumber(got[k + 1])
              got[k], got[k + 1] = nil, nil
            end
          end
          if firstLater then
            waits[#waits + 1] = firstLater
            waits[#waits + 1] = g
          elseif #got / 2 < room then
            gone[#gone + 1] = g -- its queue is empty
          else
            tail[#tail + 1] = g
          end
        end
        if got and #got > 0 then
          limitsOf[g] = { concurrency, rateMax, ratePer, active }
          for k = 1, #got, 2 do
            due[#due + 1] = got[k]
            -- The due time without its tie fraction: the digits before the point (no number formatted).
            local score = got[k + 1]
            local dot = string.find(score, '.', 1, true)
            due[#due + 1] = dot and string.sub(score, 1, dot - 1) or score
            groupOf[#groupOf + 1] = g
            taken[#taken + 1] = got[k]
          end
          left = left - #got / 2
        end
      end
    end
  end
  if #taken > 0 then callMany('ZREM', groupDueKey, taken) end
  if #gone > 0 then callMany('ZREM', groupsKey, gone) end
  if #held > 0 then
    callMany('ZREM', groupsKey, held)
    local flags = {}
    for i = 1, #held do
      flags[2 * i - 1] = 'h:' .. held[i]
      flags[2 * i] = '1'
    end
    local fresh = callMany('HSET', groupStateKey, flags)
    if fresh > 0 then rcall('HINCRBY', countersKey, 'groupsHeld', fresh) end
  end
  if #waits > 0 then zaddMany(groupsKey, waits) end
  giveTurns(tail)
  -- More now: groups left unserved (the batch filled first), served ones at the end of the line,
  -- or waiting ones the bounded promotion did not reach.
  local more = #tail > 0 or served < #ready or #waking == GROUP_PROMOTE_MAX
  return due, groupOf, limitsOf, more
end

-- The claim's accounting of the grouped jobs it delivers: `ids[k]` of group `groupOf[k]` (false:
-- none) got token firstToken + k - 1. Counts them running, and logs them in their groups' rate
-- windows.
local function groupsStarted(ids, groupOf, firstToken, now, limitsOf)
  local tally = groupTally()
  local starts = {}
  for k = 1, #ids do
    local g = groupOf[k]
    if g then
      groupTallyAdd(tally, g)
      local limits = limitsOf[g]
      if limits and limits[2] then
        local list = starts[g]
        if list == nil then
          list = {}
          starts[g] = list
        end
        list[#list + 1] = now
        list[#list + 1] = int(firstToken + k - 1)
      end
    end
  end
  -- One HSET of the running counts (claimFromGroups read them), and the groups now at their
  -- concurrency out of the line and held at once (not at the next claim that meets them), so that
  -- counts and the metrics say so as soon as it is true.
  local running, full, heldFlags = {}, {}, {}
  for i = 1, #tally.order do
    local g = tally.order[i]
    local limits = limitsOf[g]
    local now = (limits and limits[4] or 0) + tally.n[g]
    running[#running + 1] = g
    running[#running + 1] = now
    if limits and limits[1] and now >= limits[1] then
      full[#full + 1] = g
      heldFlags[#heldFlags + 1] = 'h:' .. g
      heldFlags[#heldFlags + 1] = '1'
    end
    if starts[g] then
      local rkey = groupRateKey(g)
      zaddMany(rkey, starts[g])
      rcall('PEXPIRE', rkey, limits[3])
    end
  end
  if #running > 0 then callMany('HSET', groupActiveKey, running) end
  if #full > 0 then
    callMany('ZREM', groupsKey, full)
    local fresh = callMany('HSET', groupStateKey, heldFlags)
    if fresh > 0 then rcall('HINCRBY', countersKey, 'groupsHeld', fresh) end
  end
end
