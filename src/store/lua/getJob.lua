#!lua flags=no-writes
--[[
  getJob: one job's record and state, read atomically.

  KEYS: the partition keys (lib.lua); a job in the wheel is found through its index (O(bucket)).
  ARGV[2] id
  Returns: nil when absent, else { state, record, score, lastError | '' }
    state  'delayed' | 'ready' | 'active' | 'dead'
    score  due time (delayed, ready), lease deadline (active) or dead-lettered at (dead), ms
  Errors: none.
]]
local id = ARGV[2]
local rec = rcall('HGET', jobsKey, id)
if not rec then
  local found = wheelFind(id)
  if not found then return nil end
  local err = rcall('HGET', errorsKey, id) or ''
  return { found.dueAt <= nowMs() and 'ready' or 'delayed', found.record, int(found.dueAt), err }
end
local err = rcall('HGET', errorsKey, id) or ''
local score = rcall('ZSCORE', activeKey, id)
if score then return { 'active', rec, score, err } end
score = rcall('ZSCORE', deadKey, id)
if score then return { 'dead', rec, score, err } end
score = rcall('ZSCORE', dueKey, id)
if score then
  return { tonumber(score) <= nowMs() and 'ready' or 'delayed', rec, score, err }
end
return nil
