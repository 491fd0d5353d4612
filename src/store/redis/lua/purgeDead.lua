#!lua flags=allow-oom
--[[
  purgeDead: delete dead letters for good, oldest first, a bounded number per call.

  KEYS: the partition keys (includes/keys.lua).
  Reads:     none
  Writes:    dead, jobs, errors
  ARGV[2] limit  integer
  Returns: number of jobs deleted (the caller repeats until 0)
  Errors: none.
]]
-- includes: keys
local ids = rcall('ZRANGE', deadKey, 0, tonumber(ARGV[2]) - 1)
for i = 1, #ids do
  rcall('ZREM', deadKey, ids[i])
  rcall('HDEL', jobsKey, ids[i])
  rcall('HDEL', errorsKey, ids[i])
end
return #ids
