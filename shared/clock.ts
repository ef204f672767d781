// Time source for rules that depend on the wall clock (cursor expiry, idempotency windows), so tests can move it.
export interface Clock { now(): number }
export const systemClock: Clock = { now: () => Date.now() };
