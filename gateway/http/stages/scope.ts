// The scope check (routes with a scope): after admission, so a refused scope is still counted.
import type { StagePlan } from '../../../shared/http/pipeline.ts';
import { requireScope } from '../auth.ts';
import type { AnyRoute } from '../types.ts';
import type { ApiRequest } from './state.ts';

export const scopeStage: StagePlan<AnyRoute, ApiRequest> = (route) => {
  const scope = route.scope;
  return scope ? { name: 'scope', run: (x) => requireScope(x.principal!, scope) } : undefined;
};
