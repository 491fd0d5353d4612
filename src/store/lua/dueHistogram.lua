#!lua flags=no-writes
--[[
  dueHistogram: how many waiting jobs fall due in each time window from now on (a timeline).

  KEYS: the partition keys (lib.lua).
  ARGV[2..] bounds  ms, increasing offsets from now
  Returns: { now, ready, count1, ..., countN, countAfter }
    ready = due at or before now; count i = due after now + bound i-1 (0 for the first) and
    at or before now + bound i; countAfter = due after now + the last bound.
  Errors: none.
]]
local now = nowMs()
local out = { now, rcall('ZCOUNT', dueKey, '-inf', now) }
local from = now
for i = 2, #ARGV do
  local to = now + tonumber(ARGV[i])
  out[#out + 1] = rcall('ZCOUNT', dueKey, '(' .. int(from), to)
  from = to
end
out[#out + 1] = rcall('ZCOUNT', dueKey, '(' .. int(from), '+inf')
return out
