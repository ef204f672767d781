// Authentication (routes with a scope): the credential from the in-process cache without a promise (the hot path),
// else looked up. A request whose credential fails is counted against its client address before it is refused, so
// every answer carries rate-limit headers and a flood of bad keys cannot hammer the lookup.
//
// Two kinds of credential: a bearer API key (or client token) in Authorization, and a console session in the Cookie
// ol_session (shared/sessions/sessions.ts). A request with both uses the key. A state-changing request (POST, PUT,
// PATCH, DELETE) made with a session must carry X-CSRF-Token equal to the session's token: 403 forbidden otherwise,
// before anything runs.
import type { StagePlan } from '../../../shared/http/pipeline.ts';
import { ApiError } from '../../../shared/http/error-status.ts';
import { csrfMatches, SESSION_COOKIE, type SessionPrincipal } from '../../../shared/sessions/sessions.ts';
import type { Admission } from '../admission.ts';
import type { Authenticator } from '../auth.ts';
import type { AnyRoute } from '../types.ts';
import { MUTATING, type ApiRequest } from './state.ts';

const csrfRefused = () => new ApiError('forbidden', 'A request that changes something with a console session must carry the '
  + 'X-CSRF-Token header with the session\'s csrf_token (answered by POST /v1/session and GET /v1/session).',
{ fields: { 'X-CSRF-Token': 'missing or not this session\'s token' } });

export const authStage = (auth: Authenticator, admission: Admission): StagePlan<AnyRoute, ApiRequest> => (route) =>
  route.scope ? {
    name: 'auth',
    run(x) {
      const authorization = x.inc.headers.authorization;
      if (authorization === undefined) {
        const cookie = x.inc.headers.cookie;
        if (cookie !== undefined && cookie.includes(`${SESSION_COOKIE}=`)) {
          const checked = (p: SessionPrincipal) => {
            if (MUTATING.has(x.inc.method) && !csrfMatches(p, x.inc.headers['x-csrf-token'])) throw csrfRefused();
            x.principal = p;
          };
          const hit = auth.cachedSession(cookie);
          if (hit) {
            try { checked(hit); return; } catch (err) { return admission.anonymous(x.inc.remote, x.headers).then(() => { throw err; }); }
          }
          return auth.authenticateSession(cookie).then(checked).catch(
            (err) => admission.anonymous(x.inc.remote, x.headers).then(() => { throw err; }));
        }
      }
      const cached = auth.cached(authorization);
      if (cached) { x.principal = cached; auth.touch(cached); return; }
      return auth.authenticate(authorization).then(
        (p) => { x.principal = p; auth.touch(p); },
        (err) => admission.anonymous(x.inc.remote, x.headers).then(() => { throw err; }),
      );
    },
  } : undefined;
