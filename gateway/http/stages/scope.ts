// The scope check (routes with a scope): after admission, so a refused scope is still counted.
import type { StagePlan } from '../../../shared/http/pipeline.ts';
import { assertWholeOrganization } from '../../../shared/sub-entities/limit.ts';
import { requireScope } from '../auth.ts';
import type { AnyRoute } from '../types.ts';
import type { ApiRequest } from './state.ts';

// A credential limited to a sub-entity is refused on routes that serve the whole organization (route.subEntities):
// deny unless the route narrows to the sub-entity, so a new area is closed to such keys until it is made to narrow.
export const scopeStage: StagePlan<AnyRoute, ApiRequest> = (route) => {
  const scope = route.scope;
  if (!scope) return undefined;
  const whole = route.subEntities !== 'scoped';
  const what = `${route.method} ${route.path}`;
  return { name: 'scope', run: (x) => {
    requireScope(x.principal!, scope);
    if (whole) assertWholeOrganization(x.principal!, what);
  } };
};
