--[[
  records: a job's record, the value of its `jobs` field (and, after its id and due offset, of its
  wheel bucket entry, wheel.lua).

  A record is "<attempts>,<token>,<dueAt>,<maxAttempts>,<backoff>[,<tickAt>][,<traceparent>]\n<payload JSON>"
  (a schedule's tick job has the 6th field, its tick time; a job added in a trace has a last field,
  the W3C traceparent of its producer, "00-<32 hex>-<16 hex>-<2 hex>", told from a tick time by its
  '-'; a job without one pays no byte. The scripts that rewrite a record carry both along inside
  `backoff`, which holds no comma: readRecord's last capture runs to the end of the header, so a
  retry, reaping, reschedule, retryDead, a wheel move and retention keep them as they are, and only
  a replace-add, which writes a new record, changes them). JSON.stringify
  never writes a raw newline, so the first one ends the header. `attempts` counts the deliveries that
  ended (a claim does not touch the record: an active job's current delivery is attempts + 1).
  `token` is always '0' (the lease holds it). `dueAt` is '' while the job waits (the `due` score holds
  it, and 13 bytes a job add up); a dead job's record has it, so it knows when it fell due.
]]

local function readRecord(rec)
  local nl = string.find(rec, '\n', 1, true)
  local attempts, token, dueAt, maxAttempts, backoff =
    string.match(string.sub(rec, 1, nl - 1), '^(%d+),(%d+),(%d*),(%d*),(.*)$')
  return {
    attempts = tonumber(attempts), token = token, dueAt = dueAt,
    maxAttempts = maxAttempts, backoff = backoff, payload = string.sub(rec, nl + 1),
  }
end

local function writeRecord(r)
  return r.attempts .. ',' .. r.token .. ',' .. r.dueAt .. ',' .. r.maxAttempts .. ',' .. r.backoff .. '\n' .. r.payload
end

-- The record of a job just added: no delivery yet, no token, its due time kept by `due` or the wheel.
local function newRecord(maxAttempts, backoff, payload)
  return '0,0,,' .. maxAttempts .. ',' .. backoff .. '\n' .. payload
end

-- The tick time (digits) of a schedule tick's record, its header's 6th field; nil for another job
-- (a traceparent in that place has a '-' after its first two digits).
local function recordTick(rec)
  return string.match(rec, '^%d+,%d+,%d*,%d*,[^,\n]*,(%d+)[,\n]')
end

-- Whether a job record is a schedule's tick.
local function isTickRecord(rec)
  return recordTick(rec) ~= nil
end
