// What caller trust charges, in one place: the reputation code charges these, Number Health's policy endpoint
// publishes them, the docs quote them. Charges go through the daily spend cap (shared/spend/charges.ts).

/** One paid fresh reputation check of one number (all carriers), in cents. */
export const FRESH_CHECK_PRICE_CENTS = 10;

/** One remediation case for a flagged number, in cents, by kind: under the organization's own approved enterprise
 *  (own_brand) or under the platform's umbrella registration (umbrella). */
export const REMEDIATION_PRICE_CENTS = { own_brand: 1500, umbrella: 2500 } as const;
