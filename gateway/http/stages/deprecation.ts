// Deprecation (deprecated routes only): Deprecation, Sunset and Link on every successful answer of the route.
import type { StagePlan } from '../../../shared/http/pipeline.ts';
import type { AnyRoute } from '../types.ts';
import { deprecationHeaders } from '../wire.ts';
import type { ApiRequest } from './state.ts';

export const deprecationStage: StagePlan<AnyRoute, ApiRequest> = (route) => {
  if (!route.deprecated) return undefined;
  const headers = deprecationHeaders(route.deprecated);
  return { name: 'deprecation', run: (x) => { Object.assign(x.headers, headers); } };
};
