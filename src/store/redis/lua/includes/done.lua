--[[
  done: the `done` buckets, the jobs completed in the last 60 to 90 s and the token that completed
  each.

  A completed job is remembered in the `done` bucket of its period (period = floor(now / 30 s);
  bucket = period % 3; `meta` field `donePeriod` = the period last written). When a new period
  begins, the bucket it reuses, holding jobs of three periods ago, is dropped whole (UNLINK: freed in
  the background), so an entry lives 60 to 90 s and forgetting costs O(1) per period. This lets the
  scripts, not a client's clock, tell a resent ack ("acked") from a late one of a lost lease
  ("stale") and from a typo ("not found"), and keeps an add resent after a lost reply from running
  a job again that already completed. A `done` id is never in `jobs`: the one add that writes such
  an id (a replace-add) removes its entry.
]]
-- includes: keys

-- One period of the `done` buckets (ms): a completed job is remembered 2 to 3 periods, the window in
-- which a resent ack still answers "acked" and a resent keep-add of its id writes nothing (README,
-- "Redis keys" and "Adding an existing id").
local DONE_PERIOD_MS = 30000

-- Moves the `done` buckets on to the current period: a bucket that a new period reuses is dropped
-- whole, UNLINK freeing a large one in the background. Returns the current period's bucket key, the
-- period, and whether `donePeriod` is set (a queue that never completed a job has none, and this
-- writes nothing for it). One HGET while the period lasts, none when the caller read `donePeriod`
-- already and passes it as `last` (false when unset).
local function rotateDone(now, last)
  local period = math.floor(now / DONE_PERIOD_MS)
  if last == nil then last = rcall('HGET', metaKey, 'donePeriod') end
  if last and tonumber(last) ~= period then
    -- Periods last+1..period begin now (at most three buckets to drop, whatever the gap).
    for p = math.max(tonumber(last) + 1, period - 2), period do rcall('UNLINK', doneKeys[p % 3 + 1]) end
    rcall('HSET', metaKey, 'donePeriod', period)
  end
  return doneKeys[period % 3 + 1], period, last ~= false
end

-- The token that completed job `id` within the last 60 to 90 s, or nil.
local function doneBy(id)
  for b = 1, 3 do
    local token = rcall('HGET', doneKeys[b], id)
    if token then return token end
  end
  return nil
end
