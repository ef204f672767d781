// Idempotency (mutating routes with a scope), in two stages around the handler. `idempotency` claims the key (a
// first attempt goes on with the claim; a repeat is answered with the recorded response, and the handler is
// skipped); `idempotency-record` stores the answer of a first attempt. The handler stage runs a claimed attempt
// through runClaimed, which turns its failure into the answer to record, or into the winner's answer when a twin
// with the same key committed first.
import { canonicalJson, IdempotencyRecordExists, IdempotencyStore, type StoredResponse } from '../../../shared/idempotency/idempotency-store.ts';
import { errorReply } from '../../../shared/http/error-status.ts';
import { validationError } from '../../../shared/errors.ts';
import { sha256hex } from '../../../shared/ids.ts';
import type { Logger } from '../../../shared/log.ts';
import type { StagePlan } from '../../../shared/http/pipeline.ts';
import type { AnyRoute } from '../types.ts';
import { serialize } from '../wire.ts';
import { MUTATING, type ApiRequest } from './state.ts';

const applies = (route: AnyRoute) => route.scope !== null && MUTATING.has(route.method) && route.idempotency !== false;

export const idempotencyStage = (store: IdempotencyStore): StagePlan<AnyRoute, ApiRequest> => (route) =>
  route.idempotency === false ? {
    // A route whose answer must never be stored (a secret shown once): an Idempotency-Key is refused, not ignored.
    name: 'idempotency',
    run(x) {
      if (x.inc.headers['idempotency-key'] !== undefined) {
        throw validationError({ 'Idempotency-Key': 'not accepted by this operation: its answer holds a secret that is shown once and never stored' });
      }
    },
  } : applies(route) ? {
    name: 'idempotency',
    run(x) {
      const key = x.inc.headers['idempotency-key'];
      if (key === undefined) return;
      IdempotencyStore.validateKey(key);
      const { inc, principal } = x;
      const fingerprint = sha256hex(`${inc.method} ${inc.path}?${inc.query}\n${canonicalJson(x.body ?? null)}`);
      return store.claim(principal!.credentialId ?? principal!.keyId, key, fingerprint, x.requestId).then((claim) => {
        if (claim.kind === 'replay') {
          x.reply = claim.response;
          x.headers['Idempotency-Replay'] = 'true';
        } else x.claim = claim;
      });
    },
  } : undefined;

/** Runs the handler of a claimed attempt. What the handler recorded with its effect is what every replay will
 *  send, so that is what this attempt sends too. */
export async function runClaimed(x: ApiRequest, handle: () => Promise<StoredResponse>, log: Logger): Promise<void> {
  const claim = x.claim!;
  try {
    const r = await handle();
    x.reply = r.status < 300 && claim.recorded ? claim.recorded : r;
  } catch (err) {
    // Another attempt with this key committed first: this one rolled back; answer with the winner's response.
    if (err instanceof IdempotencyRecordExists) {
      x.reply = await claim.replayCommitted(); x.lost = true; x.headers['Idempotency-Replay'] = 'true';
      return;
    }
    x.reply = serialize(errorReply(err, log, x.requestId));
    // A 409 can be the effect of a racing twin (same key and request) that committed first: replay it.
    const twin = x.reply.status === 409 ? await claim.committedTwin() : null;
    if (twin) { x.reply = twin; x.lost = true; x.headers['Idempotency-Replay'] = 'true'; }
  }
}

export const idempotencyRecordStage: StagePlan<AnyRoute, ApiRequest> = (route) =>
  applies(route) ? {
    name: 'idempotency-record',
    run: (x) => (x.claim && !x.lost ? x.claim.finish(x.reply!) : undefined),
  } : undefined;
