#!lua flags=allow-oom
--[[
  extend: renew the leases of jobs whose handlers are still running.

  KEYS: the partition keys (includes/keys.lua).
  Reads:     leases
  Writes:    active
  ARGV[2]   leaseMs   ms  new lease length from now
  ARGV[3]   entries  "<id>\t<token>\n" per entry (readEntries)
  Returns: { now, lostIndex1, ... }  0-based positions of the pairs whose lease this caller no
           longer holds (their handler should stop: another worker may be running them).
  Errors: none.
]]
-- includes: keys, base, leases
local now = nowMs()
local deadline = int(now + tonumber(ARGV[2]))
local out = { now }
local ids, entries = readEntries(ARGV[3])
local leases = hmgetMany(leasesKey, ids)
local renewed = {}
for i = 1, #ids do
  if leaseHeldBy(leases[i], entries[2 * i]) then
    renewed[#renewed + 1] = deadline
    renewed[#renewed + 1] = ids[i]
  else
    out[#out + 1] = i - 1
  end
end
if #renewed > 0 then
  for j = 1, #renewed, 1000 do rcall('ZADD', activeKey, 'XX', unpack(renewed, j, math.min(j + 999, #renewed))) end
end
return out
