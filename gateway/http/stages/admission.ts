// Admission (routes with a scope): counts the request against its key's per-minute limit (429 when over); answers
// without a promise while the key's leased block of tokens covers it.
import type { StagePlan } from '../../../shared/http/pipeline.ts';
import type { Admission } from '../admission.ts';
import type { AnyRoute } from '../types.ts';
import type { ApiRequest } from './state.ts';

export const admissionStage = (admission: Admission): StagePlan<AnyRoute, ApiRequest> => (route) =>
  route.scope ? { name: 'admission', run: (x) => admission.credential(x.principal!, x.headers) } : undefined;
