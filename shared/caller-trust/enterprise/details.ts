import type { Db, Tx } from '../../db.ts';
import { validationError } from '../../errors.ts';
import { isE164 } from '../../phone/e164.ts';
import { einProblem } from './ein.ts';

// The legal business details of an enterprise registration (the reference leaves their names open; these are the
// fields carriers' and branded-calling vendors' vetting forms ask for). What JSON Schema cannot say is checked here.

export const BUSINESS_TYPES = ['sole_proprietorship', 'partnership', 'llc', 'corporation', 'nonprofit', 'government'] as const;
export type BusinessType = (typeof BUSINESS_TYPES)[number];
/** How each business type reads in the Letter of Authorization. */
export const BUSINESS_TYPE_LABELS: Record<BusinessType, string> = {
  sole_proprietorship: 'Sole Proprietorship', partnership: 'Partnership', llc: 'Limited Liability Company',
  corporation: 'Corporation', nonprofit: 'Nonprofit Organization', government: 'Government Entity',
};

export interface RegisteredAddress {
  line1: string; line2?: string | null; city: string; state: string; postal_code: string; country: 'US';
}
export interface AuthorizedContact { name: string; title: string; email: string; phone: string }

export interface BusinessDetails {
  legal_name: string;
  ein: string;
  business_type: BusinessType;
  industry: string;
  website: string;
  registered_address: RegisteredAddress;
  authorized_contact: AuthorizedContact;
  /** The organization's numbers the LOA covers (E.164). */
  phone_numbers: string[];
}

export const US_STATES = new Set(('AL AK AZ AR CA CO CT DE DC FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH '
  + 'NJ NM NY NC ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY PR GU VI AS MP').split(' '));

/** Checks the rules JSON Schema does not express; every problem is named in one validation_error. Numbers must be
 *  held (not released) by the organization. */
export async function assertBusinessDetails(q: Db | Tx, organizationId: string, d: Partial<BusinessDetails>): Promise<void> {
  const fields: Record<string, string> = {};
  if (d.legal_name !== undefined && !d.legal_name.trim()) fields.legal_name = 'must not be blank';
  if (d.ein !== undefined) {
    const p = einProblem(d.ein);
    if (p) fields.ein = p;
  }
  if (d.website !== undefined) {
    let ok = false;
    try {
      const u = new URL(d.website);
      ok = (u.protocol === 'https:' || u.protocol === 'http:') && u.hostname.includes('.');
    } catch { /* not a URL */ }
    if (!ok) fields.website = 'must be an http(s) URL with a domain name';
  }
  const a = d.registered_address;
  if (a) {
    if (!US_STATES.has(a.state)) fields['registered_address.state'] = 'must be a US state or territory code (two capital letters)';
    if (!/^\d{5}(-\d{4})?$/.test(a.postal_code)) fields['registered_address.postal_code'] = 'must be a ZIP code (NNNNN or NNNNN-NNNN)';
  }
  if (d.authorized_contact && !isE164(d.authorized_contact.phone)) fields['authorized_contact.phone'] = 'must be an E.164 number';
  if (d.phone_numbers) {
    const bad = d.phone_numbers.filter((n) => !isE164(n));
    if (bad.length) fields.phone_numbers = `not E.164 numbers: ${bad.join(', ')}`;
    else if (new Set(d.phone_numbers).size !== d.phone_numbers.length) fields.phone_numbers = 'must not repeat a number';
    else {
      const held = await q.any<{ phone_number: string }>(
        `SELECT phone_number FROM phone_numbers WHERE organization_id = $1 AND status <> 'RELEASED' AND phone_number = ANY($2)`,
        [organizationId, d.phone_numbers]);
      const have = new Set(held.map((r) => r.phone_number));
      const missing = d.phone_numbers.filter((n) => !have.has(n));
      if (missing.length) fields.phone_numbers = `not numbers of this organization: ${missing.join(', ')}`;
    }
  }
  if (Object.keys(fields).length) throw validationError(fields);
}
