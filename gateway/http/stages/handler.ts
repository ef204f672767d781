// The handler (every route): the route's own code with its context (Ctx). A replayed request skips it; a claimed
// attempt runs it through the idempotency stage's runClaimed; a file reply is planned here (Range, stream slots).
import type { Principal } from '../../../shared/accounts/principal.ts';
import type { Tx, WithinTx } from '../../../shared/db.ts';
import type { StagePlan } from '../../../shared/http/pipeline.ts';
import type { NewClaim } from '../../../shared/idempotency/idempotency-store.ts';
import type { CallStreams } from '../event-stream.ts';
import { planFile, type StreamSlots } from '../file-response.ts';
import type { AnyRoute, GatewayDeps, Reply, UploadedFile } from '../types.ts';
import { serialize } from '../wire.ts';
import { runClaimed } from './idempotency.ts';
import type { ApiRequest } from './state.ts';

/** What the handler stage needs of the gateway: its resources and, for handlers that read it, its base URL. */
export interface HandlerHost { readonly deps: GatewayDeps; readonly baseUrl: string; readonly fileStreams: StreamSlots; readonly callStreams: CallStreams }

export const handlerStage = (host: HandlerHost): StagePlan<AnyRoute, ApiRequest> => (route) => ({
  name: 'handler',
  run(x) {
    if (x.reply) return; // answered by a replay
    const ctx = new HandlerContext(host, x);
    if (x.claim) return runClaimed(x, () => route.handler(ctx).then(serialize), host.deps.log);
    return route.handler(ctx).then(async (r) => {
      if (r.file) x.file = planFile(r.file, x.inc.headers.range, host.fileStreams);
      if (r.stream) {
        x.stream = await host.callStreams.open(r.stream);
        r = { ...r, headers: { ...r.headers, ...x.stream.headers } };
      }
      x.reply = serialize(r);
    });
  },
});

/** What a route handler gets (Ctx); the base URL is worked out only for handlers that read it. */
class HandlerContext {
  readonly deps: GatewayDeps;
  readonly principal: Principal;
  readonly body: unknown;
  readonly query: Record<string, string>;
  readonly params: Record<string, string>;
  readonly requestId: string;
  readonly headers: Record<string, string>;
  readonly files: Record<string, UploadedFile>;
  /** The idempotency claim of this request, when it carries an Idempotency-Key and runs for the first time. */
  readonly claim: NewClaim | null;

  constructor(private readonly host: HandlerHost, private readonly x: ApiRequest) {
    this.deps = host.deps;
    this.principal = x.principal!;
    this.body = x.body;
    this.query = x.query;
    this.params = x.params;
    this.requestId = x.requestId;
    this.headers = x.inc.headers;
    this.files = x.files;
    this.claim = x.claim;
  }

  get clientAddress(): string { return this.x.inc.remote; }

  /** See Ctx.idempotent. */
  idempotent<T, B>(reply: (result: T) => Reply<B>): WithinTx<T> | undefined {
    const claim = this.claim;
    if (!claim) return undefined;
    return (tx: Tx, result: T) => claim.recordInTx(tx, serialize(reply(result)));
  }

  get baseUrl(): string { return this.host.baseUrl; }
}
