--[[
  keys: the KEYS and ARGV[1] that every script receives, bound to names, and what the keys hold.
  Every script includes it first (src/store/redis/scripts.ts assembles a script from the includes
  it names); it is the one place in Lua that knows the order of KEYS, as PARTITION_KEY_NAMES is in
  src/store/redis/keys.ts.

  Every script receives the same KEYS, one queue partition's keys in this order (they share one
  hash tag, so one script touches one Cluster slot):
    KEYS[1] due       ZSET  id -> dueAt (epoch ms)          waiting jobs, delayed and ready
    KEYS[2] active    ZSET  id -> lease deadline (epoch ms) claimed jobs
    KEYS[3] dead      ZSET  id -> dead-lettered at (epoch ms)
    KEYS[4] jobs      HASH  id -> record (records.lua)
    KEYS[5] errors    HASH  id -> last error message
    KEYS[6] counters  HASH  running totals, and `seq`, the fencing-token sequence
    KEYS[7] meta      HASH  `format`, the storage format (initQueue.lua; absent: 1);
                            `paused` = '1' while paused; `donePeriod` (done.lua); in partition 0 also
                            `partitions`, the queue's partition count
    KEYS[8..10] done:0..2  HASH  id -> token of the claim that completed the job: the jobs
                      completed in one 30 s period, the buckets taking turns (done.lua)
    KEYS[11] leases   HASH  id -> "<token>,<dueAt>", the lease of an active job (leases.lua)
    KEYS[12] wheel    ZSET  far-future bucket number -> bucket start (the time wheel, wheel.lua:
                            its buckets and index shards are keys built there, under the same
                            hash tag)
    KEYS[13] schedules HASH schedule key -> schedule record (recurring schedules, schedules.lua)
    KEYS[14] expiry   HASH  id -> "<expireAfterMs>[d]", the deadline of a waiting job ("Deadlines" below)
    KEYS[15] completed ZSET id -> finishedAt (epoch ms): completed jobs kept by the queue's
                            retention (retention.lua)
    KEYS[16] results  HASH  id -> "<result JSON>\n<record>" of each job in `completed`
    KEYS[17] groups   ZSET  group -> turn (< 10^12: due work, served in turn order) or time to look
                            again (ms); '' is the default group (includes/groups.lua, "Groups")
    KEYS[18] group:due ZSET id -> dueAt of every grouped job waiting in a group's queue
    KEYS[19] group:jobs ZSET group -> its jobs not finished (waiting, wheel included, and active)
    KEYS[20] group:active HASH group -> its jobs running now
    KEYS[21] group:state HASH p:<g> paused, h:<g> held by its concurrency, l:<g> its own limits,
                            b:<g> the retry an in-order group starts first
  and ARGV[1] is always the partition's wake channel. (claim also gets two more keys after these,
  the memo keys of this call and of the caller's previous one: KEYS[#KEYS - 1] and KEYS[#KEYS];
  fail, release, stats and limiter take theirs after these too.)

  A script's header names the keys it touches as keys.ts and the README's "Redis keys" table name
  them: `Reads:` the keys it only reads, `Writes:` the keys it writes (and may read as well), and
  `Publishes:` the channels it may PUBLISH on.

  Invariant: a job exists iff `jobs` has its id or the wheel's index has it (wheel.lua), and then
  exactly one of due/active/dead/a wheel bucket holds it; `leases` has an entry iff the job is in
  `active`. A completed job kept by retention is in `completed` and `results` (both or neither) and
  nowhere else: an id is in at most one of `jobs`/the wheel's index and `completed`, so exactly one
  of due/active/dead/completed/a wheel bucket holds any id that has a place at all.
  `expiry` has an entry only for a waiting job (in `due` or a wheel bucket).

  Deadlines. A job added with `expireAfter` (or under the queue's default, `meta` field
  `expireAfter`, ms) has an `expiry` entry "<expireAfterMs>", with a 'd' suffix for
  `onExpire: 'drop'`. Its deadline is its due score + expireAfterMs, so a reschedule moves the
  deadline with the due time. It holds until the job's first start: the claim that takes the job
  removes the entry, and either starts it (from then on its retry policy rules: a retry, a reaped
  or released lease is never expired) or, when the deadline passed on the server's clock, does not
  deliver it: it goes to `dead` (its record's attempts stay 0, and only an expired job is dead with
  attempts 0: that is how getJob and listJobs tell reason 'expired' from 'failed') or, with 'd', is
  deleted. Both count in counters `expired`. `meta` field `expiring` = '1' (sticky, set by the add
  that first writes an entry) tells claim to look at `expiry` at all: a queue that never used a
  deadline pays nothing for it. Schedule ticks have no deadline.
]]
-- per call:
local rcall = redis.call
local dueKey, activeKey, deadKey, jobsKey, errorsKey, countersKey, metaKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local doneKeys = { KEYS[8], KEYS[9], KEYS[10] }
local leasesKey, wheelKey, schedulesKey, expiryKey = KEYS[11], KEYS[12], KEYS[13], KEYS[14]
local completedKey, resultsKey = KEYS[15], KEYS[16]
local groupsKey, groupDueKey, groupJobsKey, groupActiveKey, groupStateKey = KEYS[17], KEYS[18], KEYS[19], KEYS[20], KEYS[21]
local wakeChannel = ARGV[1]
