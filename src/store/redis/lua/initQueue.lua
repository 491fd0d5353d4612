#!lua flags=allow-oom
--[[
  initQueue: check the queue's storage format, record its partition count and format the first
  time it is used, and read both back. Called on partition 0 only: its `meta` hash holds the count
  for the whole queue, and the format of the queue (each other partition holds it too: checkFormat).

  Storage format: `meta` field `format`, an integer, written by the process that creates the queue.
  A queue without the field is in format 1, the format of sandglass before formats had a number
  (README, "Upgrading"). A caller that knows an older format than the stored one must not touch
  the queue: then this call writes nothing.

  KEYS: the partition keys (includes/keys.lua) of partition 0.
  Reads:     none
  Writes:    meta
  ARGV[2] partitions  integer, or '' to only read (a process that does not know the count)
  ARGV[3] format      integer  the newest storage format the caller knows, written as the format of
                      a queue this call creates
  Returns: { partitions, format, created }  the stored partition count (0 when none is stored and
           ARGV[2] was ''), the queue's format (1 when none is stored; above ARGV[3]: the call wrote
           nothing), and 1 when this call created the queue (wrote its count and format), else 0.
  Errors: none. (The caller compares the answers with what it asked for.)
]]
-- includes: keys
local requested, known = ARGV[2], tonumber(ARGV[3])
local meta = rcall('HMGET', metaKey, 'partitions', 'format')
local format = tonumber(meta[2] or '1')
local created = 0
if format <= known and requested ~= '' and not meta[1] then
  -- HSETNX: of two processes creating the queue at once, the first one's count and format hold.
  if rcall('HSETNX', metaKey, 'partitions', requested) == 1 then
    rcall('HSET', metaKey, 'format', known)
    created = 1
  end
  meta = rcall('HMGET', metaKey, 'partitions', 'format')
  format = tonumber(meta[2] or '1')
end
return { tonumber(meta[1] or '0'), format, created }
