// Which event_type values a webhook subscription may name, and which body shape each is delivered with.

/** The reference's table of subscribable values. */
export const REFERENCE_EVENT_TYPES = [
  'new_call', 'call_completed', 'call_no_answer', 'call_voicemail', 'call_busy', 'call_failed',
  'contact_replied', 'sms_sent', 'sms_delivered', 'sms_failed', 'contact_created',
  'number_purchased', 'number_released', 'new_appointment', 'workflow_contact_completed',
] as const;

/** Other named events of the reference. We let them be subscribed to (the reference leaves it open): each names
 *  a change a receiver can act on, and they are delivered in the same envelope as the table above. */
export const OTHER_NAMED_EVENT_TYPES = [
  'phone_call.ended', 'enterprise.status.updated', 'TEXTING_REGISTRATION_STATUS_CHANGED',
  'reputation.remediation.updated', 'number_registration.status_changed',
] as const;

/** Optimize events: subscribable by their exact name, delivered with their own flat body (`event` in the body). */
export const OPTIMIZE_EVENT_TYPES = [
  'optimize.test.created', 'optimize.test.started', 'optimize.test.completed', 'optimize.test.winner',
  'optimize.test.shipped', 'optimize.conversion.created',
] as const;

export const SUBSCRIBABLE_EVENT_TYPES: readonly string[] = [
  ...REFERENCE_EVENT_TYPES, ...OTHER_NAMED_EVENT_TYPES, ...OPTIMIZE_EVENT_TYPES,
];

const SUBSCRIBABLE = new Set(SUBSCRIBABLE_EVENT_TYPES);
export const isSubscribable = (t: string) => SUBSCRIBABLE.has(t);

/** Optimize events keep their flat body: { event, occurred_at, test | conversion }. */
export const hasFlatBody = (eventType: string) => eventType.startsWith('optimize.');
