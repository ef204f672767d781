// npm run bench:loa: how long producing a Letter of Authorization takes, in process (pdf-lib, no database): the
// unsigned letter (business details, 25 covered numbers, authorization text, signature page), and signing it with a
// typed and with a drawn (PNG) signature plus the audit-trail page. Sequential, one document at a time, after a
// warm-up; p50/p99 in ms per document. Writes bench/results/loa.json.
import { loadavg } from 'node:os';
import sharp from 'sharp';
import type { BusinessDetails } from '../shared/caller-trust/enterprise/details.ts';
import { renderSignedLoa, renderUnsignedLoa, type SignatureInput } from '../shared/caller-trust/enterprise/loa-pdf.ts';
import { round, writeResult } from './report.ts';

const N = Number(process.env.LOA_BENCH_DOCS ?? 300);
const WARMUP = 30;

const details: BusinessDetails = {
  legal_name: 'Acme Dental Group, LLC', ein: '74-1234567', business_type: 'llc', industry: 'Dental care',
  website: 'https://acmedental.example',
  registered_address: { line1: '500 Congress Ave', line2: 'Suite 200', city: 'Austin', state: 'TX', postal_code: '78701', country: 'US' },
  authorized_contact: { name: 'Dana Ruiz', title: 'Chief Executive Officer', email: 'dana@acmedental.example', phone: '+15125550100' },
  phone_numbers: Array.from({ length: 25 }, (_, i) => `+1512555${String(1000 + i)}`),
};
const drawn = await sharp({ create: { width: 400, height: 100, channels: 4, background: { r: 10, g: 20, b: 90, alpha: 1 } } }).png().toBuffer();
const provider = { name: 'Example Telecom, Inc.', address: '100 Main Street, Suite 5, Austin, TX 78701, USA' };
const signer = (signature: SignatureInput['signature']): SignatureInput => ({
  signerName: 'Dana Ruiz', signerTitle: 'Chief Executive Officer', signerEmail: 'dana@acmedental.example', signature,
  signedAt: new Date(), clientAddress: '203.0.113.7', forwardedFor: null, registrationId: '0193a4c2-7e5b-7d21-9f3a-6c8e2b1d4f70',
  signedBy: { credential: 'api_key', keyId: '0193a4c2-0000-7000-8000-000000000001', keyPrefix: 'ol_live_ab12', userId: null, userEmail: null },
});

const pct = (xs: number[], p: number) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]; };

async function measure(label: string, fn: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < WARMUP; i++) await fn();
  const ms: number[] = [];
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    await fn();
    ms.push(performance.now() - t0);
  }
  console.log(`${label.padEnd(28)} p50 ${pct(ms, 50).toFixed(2)} ms  p99 ${pct(ms, 99).toFixed(2)} ms  (${N} documents)`);
  return ms;
}

const unsigned = await renderUnsignedLoa('0193a4c2-7e5b-7d21-9f3a-6c8e2b1d4f70', details, provider, new Date());
const gen = await measure('generate (unsigned)', () => renderUnsignedLoa('0193a4c2-7e5b-7d21-9f3a-6c8e2b1d4f70', details, provider, new Date()));
const typed = await measure('sign, typed signature', () => renderSignedLoa(unsigned, signer({ kind: 'typed', text: 'Dana Ruiz' })));
const drawnMs = await measure('sign, drawn PNG signature', () => renderSignedLoa(unsigned, signer({ kind: 'drawn', png: drawn })));
const ratio = pct(typed, 50) / pct(gen, 50);
console.log(`signing (typed) takes ${ratio.toFixed(2)}x the generation time (p50); load ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);

const figures = [
  { name: 'LOA generation (unsigned, 25 numbers), p50', value: round(pct(gen, 50)), unit: 'ms/document' },
  { name: 'LOA generation (unsigned, 25 numbers), p99', value: round(pct(gen, 99)), unit: 'ms/document' },
  { name: 'LOA signing with a typed signature + audit page, p50', value: round(pct(typed, 50)), unit: 'ms/document' },
  { name: 'LOA signing with a typed signature + audit page, p99', value: round(pct(typed, 99)), unit: 'ms/document' },
  { name: 'LOA signing with a drawn PNG signature + audit page, p50', value: round(pct(drawnMs, 50)), unit: 'ms/document' },
  { name: 'LOA signing with a drawn PNG signature + audit page, p99', value: round(pct(drawnMs, 99)), unit: 'ms/document' },
  { name: 'signing (typed) ÷ generation, p50', value: round(ratio), unit: 'x' },
];
const path = writeResult('loa', figures, { note: `In process, one document at a time, ${N} per case after ${WARMUP} warm-up; the 2-core machine was shared with other engineers' work (see load).` });
console.log(`wrote ${path}`);
