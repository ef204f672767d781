import type { Db } from '../db.ts';
import { randomToken } from '../ids.ts';
import { availableSandboxNumbers, SANDBOX_AREA_CODES } from '../numbers/inventory.ts';
import { cnamFrom, insertPhoneNumber } from '../numbers/records.ts';
import type { Scope } from '../scopes.ts';
import { createApiKey } from './keys.ts';

export interface BootstrapInput {
  org: string;
  email?: string;
  scopes: Scope[];
  numbers: number;
  demo?: boolean;
}

export interface BootstrapResult {
  organization_id: string;
  user_id: string;
  api_key: string;
  api_key_id: string;
  phone_numbers: string[];
}

export const slugify = (name: string) =>
  name.toLowerCase().normalize('NFKD').replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40) || 'org';

/** Creates an organization with its owner user, one API key and `numbers` active sandbox numbers, all or nothing. */
export async function bootstrapOrganization(db: Db, input: BootstrapInput): Promise<BootstrapResult> {
  return db.tx(async (tx) => {
    const base = slugify(input.org);
    const taken = await tx.oneOrNone('SELECT 1 FROM organizations WHERE slug = $1', [base]);
    const slug = taken ? `${base}-${randomToken(6).toLowerCase()}` : base;
    const org = await tx.one('INSERT INTO organizations (name, slug) VALUES ($1, $2) RETURNING id', [input.org, slug]);
    const email = input.email ?? `owner@${slug}.example`;
    const user = await tx.one(
      "INSERT INTO users (organization_id, email, name, role) VALUES ($1, $2, $3, 'owner') RETURNING id",
      [org.id, email, null],
    );
    await tx.none('UPDATE organizations SET owner_user_id = $1 WHERE id = $2', [user.id, org.id]);
    const key = await createApiKey(tx, {
      organizationId: org.id, userId: user.id, scopes: input.scopes, isDemo: input.demo ?? false,
    });
    const numbers: string[] = [];
    for (const area of SANDBOX_AREA_CODES) {
      if (numbers.length >= input.numbers) break;
      numbers.push(...await availableSandboxNumbers(tx, area, input.numbers - numbers.length));
    }
    if (numbers.length < input.numbers) throw new Error('the sandbox inventory has too few free numbers');
    for (const n of numbers) {
      await insertPhoneNumber(tx, {
        organizationId: org.id, userId: user.id, phoneNumber: n, status: 'ACTIVE', cnamDisplayName: cnamFrom(input.org),
      });
    }
    return { organization_id: org.id, user_id: user.id, api_key: key.apiKey, api_key_id: key.apiKeyId, phone_numbers: numbers };
  });
}
