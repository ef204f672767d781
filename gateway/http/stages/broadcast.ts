// Account broadcast (mutating routes, and routes that change the account footprint): this gateway's own writes show
// in the organization's account snapshot on the very next request, without waiting for the database's change
// notice; a footprint change (changesAccount) on every gateway's before the answer is sent.
import { announceAccountChange } from '../../../shared/accounts/snapshot.ts';
import type { StagePlan } from '../../../shared/http/pipeline.ts';
import type { AnyRoute, GatewayDeps } from '../types.ts';
import { MUTATING, type ApiRequest } from './state.ts';

export const broadcastStage = (deps: GatewayDeps): StagePlan<AnyRoute, ApiRequest> => (route) => {
  const mutating = MUTATING.has(route.method);
  if (route.scope === null || !(route.changesAccount || mutating)) return undefined;
  return {
    name: 'broadcast',
    run(x) {
      const orgId = x.principal!.organizationId;
      if (route.changesAccount && x.reply!.status < 300) return announceAccountChange(deps.accounts, deps.redis, deps.key, orgId);
      if (mutating) deps.accounts.forget(orgId);
    },
  };
};
