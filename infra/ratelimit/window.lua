-- One decision of ratelimit.Redis, atomic, on Redis's clock.
-- KEYS: one sorted set per window: the requests it counts, scored by their time in microseconds.
-- ARGV[1]: the member this decision adds (unique to it); then, per key: Max, the window's length
-- in microseconds, and 1 to count the request in it or 0 to only check that it has room.
-- Returns {admitted (1 or 0), then per key: requests in the window before this one, microseconds
-- until the request whose departure frees the next slot leaves (0 when the window is empty)}.
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local member = ARGV[1]
local out = {1}
for i, key in ipairs(KEYS) do
  local max = tonumber(ARGV[3 * i - 1])
  local length = tonumber(ARGV[3 * i])
  -- a request at t counts while now - t < length
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - length)
  local count = redis.call('ZCARD', key)
  local frees = 0
  if count > 0 then
    local next = 0
    if count >= max then
      next = count - max
      out[1] = 0
    end
    local at = redis.call('ZRANGE', key, next, next, 'WITHSCORES')[2]
    frees = tonumber(at) + length - now
  end
  out[2 * i] = count
  out[2 * i + 1] = frees
end
if out[1] == 1 then
  for i, key in ipairs(KEYS) do
    if ARGV[3 * i + 1] == '1' then
      redis.call('ZADD', key, now, member)
      -- the window's length: by then every request in it has left
      redis.call('PEXPIRE', key, math.ceil(tonumber(ARGV[3 * i]) / 1000))
    end
  end
end
return out
