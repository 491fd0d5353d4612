#!lua flags=no-writes
--[[
  getJob: one job's record and state, read atomically.

  KEYS: the partition keys (includes/keys.lua); a job in the wheel is found through its index (O(bucket)).
  Reads:     due, active, dead, jobs, errors, meta, leases, wheel, wheel:<n>, wheel:idx:<s>, expiry,
             completed, results, group:due
  Writes:    none
  ARGV[2] id
  Returns: nil when absent, else { state, record, score, lastError | '', expiry | '' }
    record as stored; of an active job with its lease in the header (attempts counting the delivery
           under way, its token and due time), as its claim delivered it; of a completed one its
           `results` value, "<result JSON>\n<record>"
    state  'delayed' | 'ready' | 'active' | 'dead' | 'completed'
    score  due time (delayed, ready), lease deadline (active), dead-lettered at (dead) or finished
           at (completed), ms
    A kept completed job is shown while the queue retains completed jobs and it is not older than
    the retention's age (includes/retention.lua), trimmed or not.
    expiry a waiting job's `expiry` entry, "<expireAfterMs>[d]" (includes/keys.lua, "Deadlines"), or ''
  Errors: none.
]]
-- includes: keys, base, leases, retention, wheel
local id = ARGV[2]
local rec = rcall('HGET', jobsKey, id)
if not rec then
  local found = wheelFind(id)
  if not found then
    local finishedAt = rcall('ZSCORE', completedKey, id)
    if not finishedAt then return nil end
    local now = nowMs()
    local retain = readRetain(rcall('HGET', metaKey, 'retain'))
    if not retain or (retain.age and tonumber(finishedAt) < now - retain.age) then return nil end
    local kept = rcall('HGET', resultsKey, id)
    return kept and { 'completed', kept, finishedAt, '', '' } or nil
  end
  local err = rcall('HGET', errorsKey, id) or ''
  return { found.dueAt <= nowMs() and 'ready' or 'delayed', found.record, int(found.dueAt), err, rcall('HGET', expiryKey, id) or '' }
end
local err = rcall('HGET', errorsKey, id) or ''
local score = rcall('ZSCORE', activeKey, id)
if score then
  -- The record does not count the delivery under way: the lease does, and holds its token.
  local lease = rcall('HGET', leasesKey, id)
  return { 'active', lease and leasedRecord(rec, lease) or rec, score, err }
end
score = rcall('ZSCORE', deadKey, id)
if score then return { 'dead', rec, score, err } end
score = rcall('ZSCORE', dueKey, id) or rcall('ZSCORE', groupDueKey, id)
if score then
  return { tonumber(score) <= nowMs() and 'ready' or 'delayed', rec, score, err, rcall('HGET', expiryKey, id) or '' }
end
return nil
