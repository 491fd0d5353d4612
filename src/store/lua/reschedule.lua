#!lua
--[[
  reschedule: move a waiting job to a new due time in one step (no window where it is absent).
  A dead job is revived at the new time with a fresh set of attempts.

  KEYS: the partition keys (lib.lua).
  ARGV[2] id
  ARGV[3] delayMs  ms from the server's now, or '' when atMs is given
  ARGV[4] atMs     epoch ms, or ''
  Returns: { status, dueAt }  status 1 rescheduled, 0 not found, 2 running (unchanged)
  Errors: none.
]]
local id = ARGV[2]
local rec = rcall('HGET', jobsKey, id)
if not rec then return { 0, -1 } end
if rcall('ZSCORE', activeKey, id) then return { 2, -1 } end
local dueAt = ARGV[3] ~= '' and nowMs() + tonumber(ARGV[3]) or tonumber(ARGV[4])
local r = readRecord(rec)
if rcall('ZREM', deadKey, id) == 1 then r.attempts = 0 end
r.dueAt = ''
rcall('HSET', jobsKey, id, writeRecord(r))
rcall('ZADD', dueKey, dueAt, id)
wakeIfHead(dueAt)
return { 1, dueAt }
