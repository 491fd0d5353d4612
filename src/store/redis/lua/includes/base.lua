--[[
  base: the server's clock, integers as digits, and commands over many arguments in chunks.
]]
-- includes: keys

-- The Redis server's clock in epoch ms: due-ness and leases never depend on a client's clock.
local function nowMs()
  local t = rcall('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The server's clock in epoch ms, as a number and as its digits, built from TIME's strings: a
-- number argument of redis.call is formatted with printf, which for 13 digits costs more than a
-- cheap command (claim sends `now` to Redis at every call).
local function nowMsWithDigits()
  local t = rcall('TIME')
  local us = t[2]
  if #us < 6 then us = string.rep('0', 6 - #us) .. us end
  local digits = t[1] .. string.sub(us, 1, 3)
  return tonumber(digits), digits
end

-- Integers as plain digits (tostring would switch to exponent notation past 14 digits).
local function int(n)
  return string.format('%.0f', n)
end

-- The decimal digits as strings: building a number's digits from them costs a table look-up, where
-- formatting it (tostring, `..`, string.format) costs a printf.
local DIGITS = { [0] = '0', '1', '2', '3', '4', '5', '6', '7', '8', '9' }

-- Calls `command key args...` for many args in chunks of at most 1,000 (unpack stays within Lua's
-- stack limit), so that a batch costs O(1) calls whatever its size. Returns the sum of the replies.
local function callMany(command, key, args)
  local sum = 0
  for i = 1, #args, 1000 do sum = sum + rcall(command, key, unpack(args, i, math.min(i + 999, #args))) end
  return sum
end

-- HMGET of many fields in chunks: the values in order, false for a missing one.
local function hmgetMany(key, fields)
  if #fields <= 1000 then return #fields > 0 and rcall('HMGET', key, unpack(fields)) or {} end
  local values = {}
  for i = 1, #fields, 1000 do
    local part = rcall('HMGET', key, unpack(fields, i, math.min(i + 999, #fields)))
    for j = 1, #part do values[#values + 1] = part[j] end
  end
  return values
end

-- ZADD of many (score, member) pairs, in chunks so that unpack stays within Lua's stack limit.
local function zaddMany(key, pairs)
  callMany('ZADD', key, pairs)
end
