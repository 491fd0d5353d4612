#!lua flags=allow-oom
--[[
  retention: read or set the partition's retention of completed jobs (`meta` field `retain`,
  includes/retention.lua), and trim the kept jobs to it, at most `limit` per call. The queue writes
  the same value into every partition (`queue.setRetention`), then calls again with '' until a
  call trims nothing; `queue.getRetention` reads partition 0 with ('', 0).

  KEYS: the partition keys (includes/keys.lua).
  Reads:     none
  Writes:    meta, completed, results
  ARGV[2] retain  "<count>,<ageMs>,<maxResultBytes>,<queue count>" to store (includes/retention.lua),
                  or '' to leave the stored value as it is
  ARGV[3] limit   integer  kept jobs to remove at most (the oldest first): those beyond the stored
                  retention, all of them while the queue keeps none; 0 trims nothing
  Returns: { retain, removed }  the stored value after the call ('' when none), how many were removed
  Errors: none.
]]
-- includes: keys, base, retention
local value, limit = ARGV[2], tonumber(ARGV[3])
if value ~= '' then rcall('HSET', metaKey, 'retain', value) end
local stored = rcall('HGET', metaKey, 'retain') or ''
local removed = 0
if limit > 0 then removed = trimCompleted(readRetain(stored ~= '' and stored or nil), nowMs(), limit) end
return { stored, removed }
