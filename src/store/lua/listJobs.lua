#!lua flags=no-writes
--[[
  listJobs: a page of jobs in one state, read atomically.

  KEYS: the partition keys (lib.lua).
  ARGV[2] state   'delayed' | 'ready' | 'active' | 'dead'
  ARGV[3] offset  integer
  ARGV[4] limit   integer (bounded by the caller)
  Returns: { now, id1, record1, score1, lastError1, ... }
    delayed and ready: soonest due first, score = due time; active: soonest lease end first,
    score = lease deadline; dead: most recent first, score = dead-lettered at
  Errors: none.
]]
local state, offset, limit = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local now = nowMs()
local page
if state == 'ready' then
  page = rcall('ZRANGEBYSCORE', dueKey, '-inf', now, 'WITHSCORES', 'LIMIT', offset, limit)
elseif state == 'delayed' then
  page = rcall('ZRANGEBYSCORE', dueKey, '(' .. int(now), '+inf', 'WITHSCORES', 'LIMIT', offset, limit)
elseif state == 'active' then
  page = rcall('ZRANGE', activeKey, offset, offset + limit - 1, 'WITHSCORES')
else
  page = rcall('ZREVRANGE', deadKey, offset, offset + limit - 1, 'WITHSCORES')
end
local out = { now }
for i = 1, #page, 2 do
  local id = page[i]
  out[#out + 1] = id
  out[#out + 1] = rcall('HGET', jobsKey, id) or ''
  out[#out + 1] = page[i + 1]
  out[#out + 1] = rcall('HGET', errorsKey, id) or ''
end
return out
