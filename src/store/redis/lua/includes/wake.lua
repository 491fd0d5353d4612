--[[
  wake: the wake-up of sleeping workers when a due time becomes the earliest (ARGV[1], the
  partition's wake channel; the wheel's own is wheel.lua wakeIfWheelHead).
]]
-- includes: keys, base

-- Tells sleeping workers about a due time that is now the earliest, so that they re-arm their
-- timer. Workers never poll on a fixed interval; this is what keeps them on time.
local function wakeIfHead(dueAt)
  local head = rcall('ZRANGE', dueKey, 0, 0, 'WITHSCORES')
  if head[2] ~= nil and tonumber(head[2]) >= dueAt then
    rcall('PUBLISH', wakeChannel, int(dueAt))
  end
end
