#!lua flags=no-writes
--[[
  stats: job counts by state and the running totals, read atomically.

  KEYS: the partition keys (lib.lua).
  Returns: { now, waiting, ready, active, dead, paused (0|1), counterName1, value1, ... }
    waiting  all of `due` (delayed + ready) and the wheel (`wheeled`); ready = due at or before now
             (a wheel job is counted delayed: its bucket moves W before it starts)
  Errors: none.
]]
local now = nowMs()
local out = {
  now,
  rcall('ZCARD', dueKey) + (tonumber(rcall('HGET', countersKey, 'wheeled')) or 0),
  rcall('ZCOUNT', dueKey, '-inf', now),
  rcall('ZCARD', activeKey),
  rcall('ZCARD', deadKey),
  rcall('HGET', metaKey, 'paused') == '1' and 1 or 0,
}
local counters = rcall('HGETALL', countersKey)
for i = 1, #counters do out[#out + 1] = counters[i] end
return out
