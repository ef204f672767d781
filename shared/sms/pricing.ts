// What an outbound SMS costs: one price per segment, charged through SpendCharges (kind 'sms', quantity =
// segments, ref = message id) so the daily spend cap and usage count it.
export const SMS_PRICE_CENTS_PER_SEGMENT = 1;

export const smsCostCents = (segments: number) => segments * SMS_PRICE_CENTS_PER_SEGMENT;
