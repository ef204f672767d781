-- Releases a number's refresh lock only if this owner still holds it (a lock that lapsed and was taken by another
-- refresh is left alone). KEYS[1] lock key, ARGV[1] owner.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
