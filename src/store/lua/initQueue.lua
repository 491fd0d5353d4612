#!lua flags=allow-oom
--[[
  initQueue: record a queue's partition count the first time it is used, and read it back.
  Called on partition 0 only: its `meta` hash holds the count for the whole queue.

  KEYS: the partition keys (lib.lua) of partition 0.
  ARGV[2] partitions  integer, or '' to only read (a process that does not know the count)
  Returns: the stored partition count, or 0 when none is stored and ARGV[2] was ''.
  Errors: none. (The caller compares the answer with what it asked for.)
]]
local requested = ARGV[2]
if requested ~= '' then rcall('HSETNX', metaKey, 'partitions', requested) end
return tonumber(rcall('HGET', metaKey, 'partitions') or '0')
