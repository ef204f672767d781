// Authentication (routes with a scope): the credential from the in-process cache without a promise (the hot path),
// else looked up. A request whose credential fails is counted against its client address before it is refused, so
// every answer carries rate-limit headers and a flood of bad keys cannot hammer the lookup.
import type { StagePlan } from '../../../shared/http/pipeline.ts';
import type { Admission } from '../admission.ts';
import type { Authenticator } from '../auth.ts';
import type { AnyRoute } from '../types.ts';
import type { ApiRequest } from './state.ts';

export const authStage = (auth: Authenticator, admission: Admission): StagePlan<AnyRoute, ApiRequest> => (route) =>
  route.scope ? {
    name: 'auth',
    run(x) {
      const authorization = x.inc.headers.authorization;
      const cached = auth.cached(authorization);
      if (cached) { x.principal = cached; return; }
      return auth.authenticate(authorization).then(
        (p) => { x.principal = p; },
        (err) => admission.anonymous(x.inc.remote, x.headers).then(() => { throw err; }),
      );
    },
  } : undefined;
