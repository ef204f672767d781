// The test suite's response check (RESPONSE_SCHEMA_CHECK=1, off in production): every answer of an API route is
// checked against what the route declares for that status, as the OpenAPI document shows it: the success status
// with its schema (or no body), a file route's 206, and the error envelope with one of the route's error codes of
// that status. A mismatch is logged at error level naming the route, status and Ajv errors, and the answer becomes
// a 500, so the test that made the request fails. A route's declarations are read when it is registered and its
// schema is compiled once, on its first answer (compiling ~100 schemas at start slows every test gateway's start by
// seconds on a busy machine).
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { ErrorCode } from '../../shared/errors.ts';
import { statusOf } from '../../shared/http/error-status.ts';
import { ErrorEnvelope } from '../../shared/http/envelope.ts';
import { routeErrorCodes } from './openapi.ts';
import type { AnyRoute, GatewayDeps } from './types.ts';

const addFormats = (addFormatsModule as unknown as { default: (a: Ajv) => Ajv }).default;

/** Answers of requests that matched no route (or no method of one): what the pipeline answers before routing. */
const UNROUTED: ErrorCode[] = ['not_found', 'method_not_allowed', 'unauthorized', 'rate_limited', 'internal_error', 'service_unavailable'];

interface RouteCheck {
  /** The success body's schema; undefined when the route declares no JSON body (a file, or nothing). */
  schema?: AnyRoute['response']['schema'];
  /** Its validator, compiled on the route's first successful answer. */
  success?: ValidateFunction;
  /** Error codes the route declares, by status. */
  codes: Map<number, Set<string>>;
}

export interface CheckedAnswer { status: number; headers: Record<string, string>; body: string | Buffer }

export class ResponseCheck {
  private readonly ajv = new Ajv({ allErrors: true, strict: false });
  private readonly envelope: ValidateFunction;
  private readonly routes = new Map<AnyRoute, RouteCheck>();
  private readonly unrouted: Map<number, Set<string>>;

  constructor(private readonly log: GatewayDeps['log']) {
    addFormats(this.ajv);
    this.envelope = this.ajv.compile(ErrorEnvelope);
    this.unrouted = byStatus(UNROUTED);
  }

  /** Reads the route's declared responses (at registration). */
  add(route: AnyRoute): void {
    const codes = byStatus(routeErrorCodes(route));
    // File routes answer an unsatisfiable Range with 416 validation_error (file-response.ts).
    if (route.response.contentType) codes.set(416, new Set(['validation_error']));
    const schema = route.response.contentType ? undefined : route.response.schema;
    this.routes.set(route, { schema, codes });
  }

  /** Null when the answer is what the route declares for its status; otherwise the mismatch is logged and the 500
   *  to send instead is returned. `route` is null for requests that matched no route. */
  check(route: AnyRoute | null, answer: CheckedAnswer, requestId: string): CheckedAnswer | null {
    const problems = this.problems(route, answer);
    if (!problems) return null;
    this.log.error({ route: route ? `${route.method} ${route.path}` : 'unmatched', status: answer.status, problems,
      body: String(answer.body).slice(0, 2000), req_id: requestId }, 'response does not match its declared schema');
    return {
      status: 500,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ error: { code: 'internal_error', message: `The response did not match its declared schema (request id ${requestId}).` } }),
    };
  }

  private problems(route: AnyRoute | null, a: CheckedAnswer): string[] | null {
    const json = (a.headers['content-type'] ?? '').startsWith('application/json') && a.body.length > 0;
    if (a.status >= 400) {
      if (!json) return ['an error answer must be the JSON error envelope'];
      const body = parse(a.body);
      if (!this.envelope(body)) return explain(this.envelope.errors);
      const code = (body as { error: { code: string } }).error.code;
      const allowed = route ? this.routes.get(route)!.codes.get(a.status) : this.unrouted.get(a.status);
      return allowed?.has(code) ? null : [`error code ${code} is not declared for status ${a.status} (declared: ${[...allowed ?? []].join(', ') || 'none'})`];
    }
    if (!route) return [`status ${a.status} answered without a route`];
    const c = this.routes.get(route)!;
    const declared = route.response;
    if (declared.contentType && (a.status === declared.status || a.status === 206)) return null;
    if (a.status !== declared.status && !declared.also?.[a.status]) return [`status ${a.status} is not declared (the route declares ${declared.status})`];
    if (!c.schema) return a.body.length === 0 ? null : ['the route declares no response body'];
    if (!json) return ['the answer is not JSON'];
    const validate = (c.success ??= this.ajv.compile(c.schema));
    return validate(parse(a.body)) ? null : explain(validate.errors);
  }
}

function byStatus(codes: ErrorCode[]): Map<number, Set<string>> {
  const m = new Map<number, Set<string>>();
  for (const code of codes) {
    const st = statusOf(code);
    if (!m.has(st)) m.set(st, new Set());
    m.get(st)!.add(code);
  }
  return m;
}

function parse(body: string | Buffer): unknown {
  try { return JSON.parse(body.toString()); } catch { return Symbol('not JSON'); }
}

const explain = (errors: ErrorObject[] | null | undefined) =>
  (errors ?? []).map((e) => `${e.instancePath || '(body)'} ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`);
