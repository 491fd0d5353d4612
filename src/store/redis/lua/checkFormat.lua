#!lua flags=allow-oom
--[[
  checkFormat: read a partition's storage format (`meta` field `format`, initQueue.lua), and write
  it into a partition of a queue that the caller has just created. Called once per process on each
  partition but 0 (initQueue.lua checks partition 0), before anything else touches the partition.

  KEYS: the partition keys (includes/keys.lua).
  Reads:     none
  Writes:    meta
  ARGV[2] format  integer  the newest storage format the caller knows
  ARGV[3] stamp   '1'|'0'  '1': the caller created the queue (initQueue.lua): write ARGV[2] as this
                  partition's format unless it has one
  Returns: the partition's format (1 when none is stored). Above ARGV[2]: the call wrote nothing.
  Errors: none.
]]
-- includes: keys
local known = tonumber(ARGV[2])
local stored = rcall('HGET', metaKey, 'format')
if not stored and ARGV[3] == '1' then
  rcall('HSET', metaKey, 'format', known)
  return known
end
return tonumber(stored or '1')
