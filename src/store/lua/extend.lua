#!lua flags=allow-oom
--[[
  extend: renew the leases of jobs whose handlers are still running.

  KEYS: the partition keys (lib.lua).
  ARGV[2]   leaseMs   ms  new lease length from now
  ARGV[3..] pairs of  id, token
  Returns: { now, lostIndex1, ... }  0-based positions of the pairs whose lease this caller no
           longer holds (their handler should stop: another worker may be running them).
  Errors: none.
]]
local now = nowMs()
local deadline = now + tonumber(ARGV[2])
local out = { now }
for i = 3, #ARGV, 2 do
  local id, token = ARGV[i], ARGV[i + 1]
  local rec = rcall('HGET', jobsKey, id)
  if rec and tokenOf(rec) == token then
    rcall('ZADD', activeKey, 'XX', deadline, id)
  else
    out[#out + 1] = (i - 3) / 2
  end
end
return out
