// Password hashing: scrypt from node:crypto (memory-hard, no dependency). Stored as
// scrypt$<log2 N>$<r>$<p>$<salt b64url>$<hash b64url>, so parameters can be raised later without breaking old hashes.
import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const LOG_N = 14; // N = 16384: 16 MiB and about 0.1 s per hash with r = 8 on this project's machines
const R = 8;
const P = 1;
const KEYLEN = 32;
const MAXMEM = 64 * 1024 * 1024;

export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 256;

const scrypt = (password: string, salt: Buffer, keylen: number, o: ScryptOptions) =>
  new Promise<Buffer>((resolve, reject) => scryptCb(password, salt, keylen, o, (err, key) => (err ? reject(err) : resolve(key))));

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(password, salt, KEYLEN, { N: 2 ** LOG_N, r: R, p: P, maxmem: MAXMEM });
  return `scrypt$${LOG_N}$${R}$${P}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

/** A hash of a password nobody knows: verified against when the email is unknown, so both cases cost the same. */
let dummy: Promise<string> | null = null;
export const dummyHash = () => (dummy ??= hashPassword(randomBytes(24).toString('base64url')));

/** Whether the password matches the stored hash; always runs scrypt (a null or malformed hash: against the dummy). */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const parsed = stored ? parse(stored) : null;
  const h = parsed ?? parse(await dummyHash())!;
  const got = await scrypt(password, h.salt, h.hash.length, { N: 2 ** h.logN, r: h.r, p: h.p, maxmem: MAXMEM });
  return timingSafeEqual(got, h.hash) && parsed !== null;
}

function parse(s: string): { logN: number; r: number; p: number; salt: Buffer; hash: Buffer } | null {
  const m = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/.exec(s);
  if (!m) return null;
  return { logN: Number(m[1]), r: Number(m[2]), p: Number(m[3]), salt: Buffer.from(m[4], 'base64url'), hash: Buffer.from(m[5], 'base64url') };
}
