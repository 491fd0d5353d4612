#!lua flags=allow-oom
--[[
  cancel: remove a waiting or dead job. A running job is not interrupted.

  KEYS: the partition keys (lib.lua); a job in the wheel is found through its index (O(bucket)).
  ARGV[2] id
  Returns: 1 cancelled, 0 not found, 2 running (left alone: its handler decides)
  Errors: none.
]]
local id = ARGV[2]
if rcall('ZSCORE', activeKey, id) then return 2 end
local removed = rcall('ZREM', dueKey, id) + rcall('ZREM', deadKey, id) + rcall('HDEL', jobsKey, id)
rcall('HDEL', errorsKey, id)
if removed > 0 then return 1 end
local found = wheelFind(id)
if found then
  wheelRemove(id, found, false)
  return 1
end
return 0
