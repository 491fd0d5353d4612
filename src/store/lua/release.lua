#!lua flags=allow-oom
--[[
  release: a closing worker hands back jobs it will not finish, so that they are delivered again
  at once rather than after their lease runs out. The attempt does not count.

  KEYS: the partition keys (lib.lua).
  ARGV[2..] pairs of  id, token
  Returns: number of jobs released (the others were no longer held by the caller).
  Errors: none.
]]
local released, minDue = 0, nil
for i = 2, #ARGV, 2 do
  local id, token = ARGV[i], ARGV[i + 1]
  local rec, held = takeLease(id, token)
  if held then
    local r = readRecord(rec)
    r.token = '0'
    if r.attempts > 0 then r.attempts = r.attempts - 1 end
    rcall('HSET', jobsKey, id, writeRecord(r))
    -- Back at its original due time: it is overdue, so it goes to the front.
    local dueAt = tonumber(r.dueAt)
    rcall('ZADD', dueKey, dueAt, id)
    if minDue == nil or dueAt < minDue then minDue = dueAt end
    released = released + 1
  end
end
if minDue ~= nil then wakeIfHead(minDue) end
return released
