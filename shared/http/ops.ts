// The operations endpoints every process serves (/healthz, /readyz, /metrics) as routes of the shared router and
// pipeline: signaling on its uWS listener (signaling/http.ts), workers and the gateway's admin port on node:http
// (shared/health-server.ts), media beside its control API (media/control-server.ts). /metrics carries the
// METRICS_TOKEN stage; the others are open.
import { METRICS_UNAUTHORIZED, metricsAuthorized } from './metrics-auth.ts';
import { PROMETHEUS_CONTENT_TYPE } from '../metrics/exposition.ts';
import { readinessReply, type Readiness } from '../readiness.ts';
import { errorBody } from './envelope.ts';
import { Pipeline, runStages, type StagePlan } from './pipeline.ts';

/** An answer written as is. */
export interface PlainAnswer { status: number; headers: Record<string, string>; body: string }

export interface OpsRoute {
  method: 'GET';
  path: string;
  /** Set on /metrics: METRICS_TOKEN (null: open). */
  metricsToken?: string | null;
  answer(): Promise<PlainAnswer>;
}

/** What an operations request carries through its stages. */
export interface OpsRequest { authorization: string | undefined; answer: PlainAnswer | null }

/** The METRICS_TOKEN check, for any stack whose routes may carry a metrics token and whose requests an answer. */
export function metricsTokenStage<R extends { metricsToken?: string | null }, X extends OpsRequest>(route: R) {
  const token = route.metricsToken;
  if (token === undefined || token === null) return undefined;
  return {
    name: 'metrics-token',
    run(x: X) { if (!metricsAuthorized(token, x.authorization)) x.answer = { ...METRICS_UNAUTHORIZED }; },
  };
}

const answerStage: StagePlan<OpsRoute, OpsRequest> = (route) => ({
  name: 'answer',
  run(x) {
    if (x.answer) return;
    return route.answer().then((a) => { x.answer = a; });
  },
});

export const json = (status: number, body: unknown): PlainAnswer =>
  ({ status, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

/** The usual three: /healthz (details(): the process's own fields; a failure is 503 "down"), /readyz when
 *  `ready` is given, /metrics when `metrics` is given. */
export function opsRoutes(o: { details: () => Promise<Record<string, unknown>>; ready?: () => Promise<Readiness>;
  metrics?: { token: string | null; render(): Promise<string> } }): OpsRoute[] {
  const routes: OpsRoute[] = [{
    method: 'GET', path: '/healthz',
    answer: () => o.details().then((d) => json(200, { status: 'ok', ...d }), (err) => json(503, { status: 'down', error: String(err) })),
  }];
  const { ready, metrics } = o;
  if (ready) routes.push({ method: 'GET', path: '/readyz', answer: () => ready().then(readinessAnswer) });
  if (metrics) {
    routes.push({
      method: 'GET', path: '/metrics', metricsToken: metrics.token,
      answer: () => metrics.render().then(
        (text) => ({ status: 200, headers: { 'content-type': PROMETHEUS_CONTENT_TYPE }, body: text }),
        (err) => json(500, errorBody({ code: 'internal_error', message: `metrics failed: ${(err as Error)?.message}` }))),
    });
  }
  return routes;
}

export function readinessAnswer(r: Readiness): PlainAnswer {
  const { status, body } = readinessReply(r);
  return { status, headers: { 'content-type': 'application/json' }, body };
}

/** The operations routes of one listener. */
export class OpsEndpoints {
  private readonly pipeline = new Pipeline<OpsRoute, OpsRequest>([metricsTokenStage, answerStage]);

  constructor(routes: OpsRoute[]) {
    for (const r of routes) this.pipeline.add(r);
  }

  /** The answer to a request: 404 for an unknown path, 405 with Allow for a method the path does not take. */
  answer(method: string, path: string, authorization: string | undefined): Promise<PlainAnswer> {
    const match = this.pipeline.match(method, path);
    if (!match) return Promise.resolve({ status: 404, headers: {}, body: '' });
    if ('allowed' in match) return Promise.resolve({ status: 405, headers: { Allow: match.allowed.join(', ') }, body: '' });
    const x: OpsRequest = { authorization, answer: null };
    return Promise.resolve(runStages(this.pipeline.stagesOf(match.route), x)).then(() => x.answer!);
  }
}
