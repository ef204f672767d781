import type { Processor, Service } from './processor.ts';
import { callCommands } from './processors/call-commands.ts';
import { callTimers } from './processors/call-timers.ts';
import { callsDial } from './processors/calls-dial.ts';
import { carrierEvents } from './processors/carrier-events.ts';
import { ticketCleanup } from './processors/ticket-cleanup.ts';
import { callsReconciler } from './services/calls-reconciler.ts';
import { optimizeRollup } from './processors/optimize-rollup.ts';
import { optimizeRollupScheduler } from './services/optimize-rollup-scheduler.ts';
import { numberProvisioning } from './processors/number-provisioning.ts';
import { cnamRegistration } from './processors/cnam-registration.ts';
import { numberRegistration } from './processors/number-registration.ts';
import { reputationRefresh } from './processors/reputation-refresh.ts';
import { reputationRemediation } from './processors/reputation-remediation.ts';
import { reputationRefreshSchedule } from './services/reputation-refresh-schedule.ts';
import { webhookDelivery } from './processors/webhook-delivery.ts';
import { eventsRetention } from './services/events-retention.ts';
import { partitionMaintenance } from './services/partition-maintenance.ts';
import { numberProvisioningSweeper } from './services/number-provisioning-sweeper.ts';
import { outboxRelay } from './services/outbox-relay.ts';
import { redisRecovery } from './services/redis-recovery.ts';
import { smsReceipts } from './processors/sms-receipts.ts';
import { smsSend } from './processors/sms-send.ts';
import { smsSendSweeper } from './services/sms-send-sweeper.ts';
import { textingVetting } from './processors/texting-vetting.ts';
import { enterpriseVetting } from './processors/enterprise-vetting.ts';
import { brandReview } from './processors/brand-review.ts';
import { callerTrustSweeper } from './services/caller-trust-sweeper.ts';
import { workflowSteps } from './processors/workflow-steps.ts';
import { workflowCalls } from './services/workflow-calls.ts';

// Every queue processor and background service of the workers process. Add one line per new file.
export const PROCESSORS: Processor<any>[] = [
  webhookDelivery,
  numberProvisioning,
  callsDial,
  carrierEvents,
  callTimers,
  callCommands,
  ticketCleanup,
  cnamRegistration,
  numberRegistration,
  enterpriseVetting,
  brandReview,
  smsSend,
  smsReceipts,
  textingVetting,
  reputationRefresh,
  reputationRemediation,
  optimizeRollup,
  workflowSteps,
];
export const SERVICES: Service[] = [
  redisRecovery,
  outboxRelay,
  numberProvisioningSweeper,
  callsReconciler,
  eventsRetention,
  partitionMaintenance,
  callerTrustSweeper,
  smsSendSweeper,
  reputationRefreshSchedule,
  optimizeRollupScheduler,
  workflowCalls,
];
