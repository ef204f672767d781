// POST /v1/client-tokens: the rules of minting. Every caller ID must be an active number the organization holds
// (or a verified caller ID, shared/caller-ids/standing.ts) and inside the minting key's ceiling; every destination inside the ceiling; the scopes a subset of the key's
// (never tokens:mint). Checked in full before anything is signed.
import type { Static } from '@sinclair/typebox';
import type { Principal } from '../accounts/principal.ts';
import { verifiedCallerIds } from '../caller-ids/standing.ts';
import type { Db } from '../db.ts';
import { DomainError, validationError } from '../errors.ts';
import { parseE164 } from '../phone/e164.ts';
import { isScope, type Scope } from '../scopes.ts';
import {
  CLIENT_TOKEN_DEFAULT_SCOPES, CLIENT_TOKEN_DEFAULT_TTL, NEVER_DELEGATED, type ClientTokenSigner,
} from './client-token.ts';
import type { ClientTokenResponse } from './schemas.ts';

export interface MintRequest {
  from_numbers: string[];
  to_numbers?: string[];
  ttl_seconds?: number;
  scopes?: string[];
}

export type Minted = Static<typeof ClientTokenResponse>;

export async function mintClientToken(db: Db, signer: ClientTokenSigner, p: Principal, req: MintRequest, nowMs = Date.now()): Promise<Minted> {
  const from = [...new Set(req.from_numbers)];
  const to = [...new Set(req.to_numbers ?? [])];
  // Indexes in `fields` refer to the request's own list (duplicates are dropped after checking).
  const requested = req.scopes ?? CLIENT_TOKEN_DEFAULT_SCOPES;
  const ttl = req.ttl_seconds ?? CLIENT_TOKEN_DEFAULT_TTL;

  const bad: Record<string, string> = {};
  req.from_numbers.forEach((n, i) => { if (!parseE164(n)) bad[`from_numbers[${i}]`] = 'must be an E.164 number, e.g. +14155550123'; });
  (req.to_numbers ?? []).forEach((n, i) => { if (!parseE164(n)) bad[`to_numbers[${i}]`] = 'must be a dialable E.164 number'; });
  requested.forEach((s, i) => {
    if (!isScope(s)) bad[`scopes[${i}]`] = 'is not a known scope';
    else if (NEVER_DELEGATED.has(s)) bad[`scopes[${i}]`] = 'cannot be granted to a client token (a client token cannot mint tokens)';
  });
  if (Object.keys(bad).length) throw validationError(bad);

  const scopes = [...new Set(requested)] as Scope[];
  const lacking: Record<string, string> = {};
  requested.forEach((s, i) => { if (!p.scopes.has(s as Scope)) lacking[`scopes[${i}]`] = 'is not a scope of the minting key'; });
  if (Object.keys(lacking).length) {
    throw new DomainError('forbidden', 'A client token\'s scopes must be a subset of the minting key\'s.', { fields: lacking });
  }
  const outside: Record<string, string> = {};
  if (p.allowedFrom.length) {
    req.from_numbers.forEach((n, i) => { if (!p.allowedFrom.includes(n)) outside[`from_numbers[${i}]`] = 'is outside the minting key\'s allowed caller IDs'; });
  }
  if (p.allowedTo.length) {
    req.to_numbers?.forEach((n, i) => { if (!p.allowedTo.includes(n)) outside[`to_numbers[${i}]`] = 'is outside the minting key\'s allowed destinations'; });
  }
  if (Object.keys(outside).length) {
    throw new DomainError('forbidden', 'Every number of a client token must fall inside the minting key\'s ceiling.', { fields: outside });
  }

  const held = await db.any<{ phone_number: string; status: string }>(
    `SELECT phone_number, status FROM phone_numbers
      WHERE organization_id = $1 AND phone_number = ANY($2::text[]) AND status <> 'RELEASED'`, [p.organizationId, from]);
  const status = new Map(held.map((r) => [r.phone_number, r.status]));
  const verified = await verifiedCallerIds(db, p.organizationId,
    req.from_numbers.map((n, i): [string, string] => [`from_numbers[${i}]`, n]).filter(([, n]) => !status.has(n)));
  const notUsable: Record<string, string> = {};
  req.from_numbers.forEach((n, i) => {
    const s = status.get(n);
    if (s === undefined && verified.has(n)) return;
    if (s === undefined) notUsable[`from_numbers[${i}]`] = 'is not a number of your organization';
    else if (s !== 'ACTIVE') notUsable[`from_numbers[${i}]`] = `is ${s.toLowerCase()}, not active`;
  });
  if (Object.keys(notUsable).length) {
    throw new DomainError('forbidden', 'Every caller ID of a client token must be an active number your organization holds.',
      { fields: notUsable, resolutionHint: 'Use numbers listed by GET /v1/phone-numbers with status ACTIVE.' });
  }

  const token = signer.sign({
    o: p.organizationId, u: p.userId, k: p.keyId, ...(p.kind === 'session' ? { m: 'session' as const } : {}), f: from, t: to, s: scopes,
    e: Math.floor(nowMs / 1000) + ttl,
  });
  return { token, expires_in: ttl, from_numbers: from, to_numbers: to, scopes };
}
