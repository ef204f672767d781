// The mobile networks whose call labelling the platform reads: reputation providers answer per network, and Number
// Health's readiness wants clean evidence on each. Not the call carrier (shared/carriers/), which places calls.
export const MOBILE_NETWORKS = ['ATT', 'TMOBILE', 'VERIZON'] as const;
export type MobileNetwork = (typeof MOBILE_NETWORKS)[number];

/** A provider's risk level of a number on one network. */
export const RISK_LEVELS = ['LOW', 'MEDIUM', 'HIGH'] as const;
export type RiskLevel = (typeof RISK_LEVELS)[number];
