--[[
  limiterSlots: the concurrency slots of a limited queue (limiter.lua `slots`), freed by the
  limiter's `free` and by release's hand-back.
]]
-- includes: keys, base

-- Frees concurrency slots (limiter.lua `slots`, on partition 0): `members` "<partition>:<token>".
-- Only a full `slots` refused anyone, so only then is the limiter's wake channel told: the ones it
-- refused sleep until this message, with `now` (the server's, read here when the caller has none).
-- Returns how many slots went.
local function freeSlots(slotsKey, members, limiterWake, now)
  local before = rcall('ZCARD', slotsKey)
  local removed = callMany('ZREM', slotsKey, members)
  local concurrency = tonumber(rcall('HGET', metaKey, 'concurrency'))
  if removed > 0 and concurrency and before >= concurrency then rcall('PUBLISH', limiterWake, now or nowMs()) end
  return removed
end
