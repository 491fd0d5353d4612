--[[
  retention: the completed jobs a queue keeps (opt-in, `queue.setRetention`). `meta` field `retain`
  = "<count>,<ageMs>,<maxResultBytes>,<queue count>" in every partition: `count` is this partition's
  share of the queue's count (ceil(queue count / partitions)), the 4th field the queue's count as
  given (read back by getRetention only); count and age '' when not set, both '' meaning the field
  only remembers maxResultBytes and no job is kept. A queue without the field keeps nothing and pays
  nothing: claim reads the field in the HMGET of `meta` it makes anyway, ack in the one it makes for
  `donePeriod`.
  While the queue keeps jobs, ack moves each completed job into `completed` (score = finishedAt,
  server clock) and `results` ("<result JSON>\n<record>", the record with the delivery that
  completed it counted, token '0' and the due time it was claimed at; result '' when none was sent;
  JSON.stringify never writes a raw newline). Then it trims: the oldest beyond `count`, and those
  finished more than `age` ago, at most RETAIN_TRIM_EXTRA more than the call kept (bounded work per
  call; a backlog after a lowered count goes down by that much per ack call, and setRetention trims
  all of it in batches). Jobs older than `age` that no ack has trimmed yet (an idle queue) are not
  shown: get, list and stats read from `now - age` on, and an add of such an id writes the job (the
  kept entry goes). A queue that gets no acks any more is trimmed by the claims: a claim asked to
  (claim.lua ARGV[9], at most once a minute per process and partition,
  src/store/redis/partition-store.ts) trims up to RETAIN_TEND_MAX, and a full batch makes it answer
  "call again now".
]]
-- includes: keys, base

local RETAIN_TRIM_EXTRA = 100
local RETAIN_TEND_MAX = 1000

-- The retention of a `retain` field, or nil when the queue keeps no completed jobs.
local function readRetain(v)
  if not v then return nil end
  local count, age, cap = string.match(v, '^(%d*),(%d*),(%d+)')
  if not cap or (count == '' and age == '') then return nil end
  return { count = tonumber(count), age = tonumber(age), cap = tonumber(cap) }
end

-- The oldest finishedAt a kept job may have to be shown at `now` ('-inf' without an age).
local function retainFrom(retain, now)
  return retain.age and int(now - retain.age) or '-inf'
end

-- The kept form of a result: over the cap, the marker of src/core/types.ts ResultTooLarge (the worker
-- sends the marker itself; this holds for any sender, e.g. a PullConsumer that did not know the cap).
local function keptResult(result, cap)
  if #result <= cap then return result end
  return '{"resultTooLarge":true,"bytes":' .. #result .. '}'
end

-- Removes kept jobs beyond the retention (or all of them when `retain` is nil), the oldest first,
-- at most `budget`. Returns how many it removed.
local function trimCompleted(retain, now, budget)
  local gone = {}
  if retain == nil then
    gone = rcall('ZRANGE', completedKey, 0, budget - 1)
  else
    if retain.age then
      gone = rcall('ZRANGEBYSCORE', completedKey, '-inf', '(' .. int(now - retain.age), 'LIMIT', 0, budget)
    end
    if retain.count and #gone < budget then
      local excess = math.min(rcall('ZCARD', completedKey) - #gone - retain.count, budget - #gone)
      if excess > 0 then gone = rcall('ZRANGE', completedKey, 0, #gone + excess - 1) end
    end
  end
  if #gone > 0 then
    callMany('ZREM', completedKey, gone)
    callMany('HDEL', resultsKey, gone)
  end
  return #gone
end
