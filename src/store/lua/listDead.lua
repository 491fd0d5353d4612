#!lua flags=no-writes
--[[
  listDead: a page of dead letters, most recent first.

  KEYS: the partition keys (lib.lua).
  ARGV[2] offset  integer
  ARGV[3] limit   integer (bounded by the caller)
  Returns: { id1, record1, deadAt1, lastError1, ... }
  Errors: none.
]]
local offset, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
local page = rcall('ZREVRANGE', deadKey, offset, offset + limit - 1, 'WITHSCORES')
local out = {}
for i = 1, #page, 2 do
  local id = page[i]
  out[#out + 1] = id
  out[#out + 1] = rcall('HGET', jobsKey, id) or ''
  out[#out + 1] = page[i + 1]
  out[#out + 1] = rcall('HGET', errorsKey, id) or ''
end
return out
