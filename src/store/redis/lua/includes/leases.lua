--[[
  leases: the leases of active jobs, and the entries ("<id>\t<token>") by which ack, fail, extend
  and release name the leases they hold.

  A lease is "<token>,<dueAt>" ("<token>,<dueAt>,<group>" for a grouped job) in `leases`, one per active job, written by claim (one HSET for the
  batch): the fencing token of the one claim allowed to ack, fail, extend or release the job, and the
  due score the job was claimed at (where reaping and release put it back, and what its handler is
  told). Its deadline is the job's `active` score; the attempt under way is the record's attempts + 1.
]]
-- includes: keys, base

-- `active` and `leases` hold one entry per running job: a few dozen to a few hundred. Redis stores
-- a sorted set or hash that small as a listpack, one block scanned from its start by every ZADD,
-- ZREM, HSET, HMGET and HDEL (with 50 entries, a ZADD or HSET costs about four times what it costs
-- in a skip list or hash table, and claim and ack make five such calls per job). A member or value
-- longer than `zset-max-listpack-value` / `hash-max-listpack-value` (64 by default) makes Redis
-- use the skip list and the hash table instead, for the life of the key: the claim that creates
-- the two keys writes ENCODER as their first entry and deletes it at once. It never outlives that
-- call, and no job id can take its name (ids hold no control character).
-- per call:
local ENCODER = '\n' .. string.rep('.', 72)

-- The entries of ack, extend and release travel as ONE argument, "<id>\t<token>\n" per entry (ids
-- hold no control character), not as two arguments each: one argument costs Redis one protocol
-- string and one Lua string however big the batch, and the client one length prefix. Returns the
-- ids, and the flat list id1, token1, id2, token2, ... (the `done` bucket's HSET takes it as it is).
local function readEntries(s)
  local ids, flat, n = {}, {}, 0
  for id, token in string.gmatch(s, '([^\t]*)\t([^\n]*)\n') do
    n = n + 1
    ids[n] = id
    flat[2 * n - 1] = id
    flat[2 * n] = token
  end
  return ids, flat
end

-- A lease's fields: token and dueAt (strings). A grouped job's lease has a third, its group
-- (includes/groups.lua leaseGroup).
local function readLease(lease)
  return string.match(lease, '^(%d+),(%d+)')
end

-- Whether `lease` (a string, or false when none) names `token`: a prefix test that allocates nothing.
local function leaseHeldBy(lease, token)
  return lease and string.find(lease, token, 1, true) == 1 and string.byte(lease, #token + 1) == 44
end

-- The record of an active job as its claim delivered it: attempts counting the delivery under way,
-- the lease's token and due time in the header (what getJob and listJobs answer for an active job).
local function leasedRecord(rec, lease)
  local token, dueAt = readLease(lease)
  local attempts, rest = string.match(rec, '^(%d+),%d+,%d*,(.*)$')
  return (tonumber(attempts) + 1) .. ',' .. token .. ',' .. dueAt .. ',' .. rest
end

-- The fencing check of ack, fail and release, for a batch: `ids[i]` and `tokens[i]` are one entry.
-- An entry holds the lease when `leases` names its token (and an earlier entry of the batch did not
-- take the same lease). The leases held are taken (the jobs leave `active` and `leases`: the caller
-- moves them on). Returns `held` (held[i] = the lease string, or nil), `leases` (each entry's lease
-- as read, false when none) and the ids taken. `beforeWrite(leases)`, when given, runs after the
-- read and before the first write (a caller that must touch keys of its own first, includes/groups.lua).
local function takeLeases(ids, tokens, beforeWrite)
  local leases = hmgetMany(leasesKey, ids)
  if beforeWrite then beforeWrite(leases) end
  local held, taken, takenIds = {}, {}, {}
  for i = 1, #ids do
    local lease, id = leases[i], ids[i]
    if not taken[id] and leaseHeldBy(lease, tokens[i]) then
      held[i] = lease
      taken[id] = true
      takenIds[#takenIds + 1] = id
    end
  end
  if #takenIds > 0 then
    callMany('ZREM', activeKey, takenIds)
    callMany('HDEL', leasesKey, takenIds)
  end
  return held, leases, takenIds
end
