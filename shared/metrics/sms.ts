// Outbound messages moving to a later status, counted by the workers process that moved them (hand-over: sent or
// failed; receipt: delivered or undelivered). The messages not final yet are a gauge (platform-gauges.ts).
import { processCounter } from './process-metrics.ts';

export const smsStatusChanges = processCounter('openline_sms_status_changes_total',
  'Outbound messages this process moved to a status (sent, failed, delivered, undelivered).', ['status']);
