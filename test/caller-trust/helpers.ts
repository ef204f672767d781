// Shared by the caller-trust test files: a valid registration body for an organization, and PDF text via poppler.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { TestEnv } from '../helpers/env.ts';

export function registrationBody(numbers: string[], over: Record<string, unknown> = {}) {
  return {
    legal_name: 'Acme Dental Group, LLC', ein: '74-1234567', business_type: 'llc', industry: 'Dental care',
    website: 'https://acmedental.example',
    registered_address: { line1: '500 Congress Ave', line2: 'Suite 200', city: 'Austin', state: 'TX', postal_code: '78701', country: 'US' },
    authorized_contact: { name: 'Dana Ruiz', title: 'Chief Executive Officer', email: 'dana@acmedental.example', phone: '+15125550100' },
    phone_numbers: numbers,
    ...over,
  };
}

export const SIGN = { signer_name: 'Dana Ruiz', signer_title: 'Chief Executive Officer', signer_email: 'dana.ruiz@acmedental.example',
  typed_signature: 'Dana Q. Ruiz', consent: true };

/** Runs a poppler-utils tool on a PDF (written to a temporary file); its stdout. */
async function poppler(tool: string, args: string[], pdf: Buffer): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'loa-'));
  try {
    await writeFile(join(dir, 'in.pdf'), pdf);
    return (await promisify(execFile)(tool, [...args, join(dir, 'in.pdf'), ...(tool === 'pdftotext' ? ['-'] : [])])).stdout;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The text of a PDF (or of its page `page`, from 1) as pdftotext reads it, with runs of spaces collapsed. */
export async function pdfText(pdf: Buffer, page?: number): Promise<string> {
  const range = page === undefined ? [] : ['-f', String(page), '-l', String(page)];
  return (await poppler('pdftotext', ['-layout', ...range], pdf)).replace(/[ \t]+/g, ' ');
}

/** The fonts of a PDF as pdffonts lists them: name and whether it is embedded. */
export async function pdfFonts(pdf: Buffer): Promise<{ name: string; embedded: boolean }[]> {
  const lines = (await poppler('pdffonts', [], pdf)).split('\n').slice(2).filter((l) => l.trim());
  // Columns: name, type (may contain spaces), encoding, emb, sub, uni, object id: read emb from the right.
  return lines.map((l) => { const c = l.trim().split(/\s+/); return { name: c[0], embedded: c[c.length - 5] === 'yes' }; });
}

/** Creates a registration for the organization's numbers; returns its id. */
export async function createRegistration(env: TestEnv, key: string, numbers: string[], over: Record<string, unknown> = {}): Promise<string> {
  const r = await env.request('POST', '/v1/caller-trust/enterprise', { key, body: registrationBody(numbers, over) });
  if (r.status !== 201) throw new Error(`create failed: ${r.status} ${r.text}`);
  return r.body.data.id;
}
