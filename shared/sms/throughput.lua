-- Per-number send pacing, shared by every workers process (Redis is the one clock: TIME).
-- KEYS[1] the number's next free send slot (ms), KEYS[2] when the number last handed a message over (ms)
-- ARGV[1] interval between two messages of the number (ms)
-- ARGV[2] the message's slot (ms) from an earlier visit, or -1 on its first visit (a slot is reserved: FIFO)
-- Returns { send (1 = hand it over now, 0 = wait), slot, wait_ms }.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local interval = tonumber(ARGV[1])
local slot = tonumber(ARGV[2])
if slot < 0 then
  local free = tonumber(redis.call('GET', KEYS[1]) or '0')
  slot = math.max(now, free)
  redis.call('SET', KEYS[1], slot + interval, 'PX', slot + interval - now + 60000)
end
if slot > now then return { 0, slot, slot - now } end
-- A message that comes late (workers were busy) must still keep the interval after the last one handed over.
local last = tonumber(redis.call('GET', KEYS[2]) or '-1')
if last >= 0 and now - last < interval then return { 0, slot, last + interval - now } end
redis.call('SET', KEYS[2], now, 'PX', interval + 60000)
return { 1, slot, 0 }
