import { createHash } from 'node:crypto';
import { PDFDocument, PageSizes, StandardFonts, rgb, type PDFFont, type PDFPage } from 'pdf-lib';
import { BUSINESS_TYPE_LABELS, type BusinessDetails } from './details.ts';
import { drawScriptSignature } from './script-font.ts';

// The Letter of Authorization as a real PDF (pdf-lib). The unsigned letter ends with a signature page whose block
// sits at fixed coordinates, so signing loads the unsigned document, writes the signature into that block and
// appends an audit-trail page: every byte of the unsigned letter stays in the signed one, and its SHA-256 is printed
// on the audit page.

export const LOA_TITLE = 'Letter of Authorization: Branded Calling and Caller Identity';

/** Who the letter authorizes: the platform operator (PLATFORM_LEGAL_NAME, PLATFORM_LEGAL_ADDRESS). */
export interface LetterParty { name: string; address: string }

/** The body of the letter: what the business authorizes the platform operator (and its partners) to do. */
export function authorizationText(d: BusinessDetails, provider: LetterParty): string[] {
  return [
    `${d.legal_name} ("the Business"), a ${BUSINESS_TYPE_LABELS[d.business_type]} with Employer Identification Number `
      + `${d.ein}, authorizes ${provider.name}, ${provider.address} ("the Provider"), and the carriers, branded-calling `
      + 'vendors and analytics partners the Provider works with, to register and present caller identity information '
      + 'for the telephone numbers listed in this letter: to submit the Business\'s legal name, Employer Identification '
      + 'Number and the details below for vetting; to register the Business\'s display identity (name, logo and call '
      + 'reason) with the AT&T, T-Mobile and Verizon networks; and to request reputation review and remediation of '
      + 'those numbers on the Business\'s behalf.',
    'The Business states that it holds the right to use each listed number, that the information in this letter is '
      + 'true and complete, and that it will tell the Provider at once when a number leaves its control. This '
      + 'authorization lasts until the Business revokes it in writing to the Provider or the registration is deleted.',
    'The person signing states that they are authorized to bind the Business.',
  ];
}

/** Which credential signed: the API key (and its user, when the key belongs to one) behind the request. */
export interface SignedBy {
  credential: 'api_key' | 'client_token' | 'session';
  keyId: string;
  /** The key's display prefix (its first characters), so a person can recognize it. */
  keyPrefix: string;
  userId: string | null;
  userEmail: string | null;
}

export interface SignatureInput {
  signerName: string;
  signerTitle: string;
  signerEmail: string;
  /** Typed signature text, or a drawn signature as PNG bytes (already decoded and re-encoded by the caller). */
  signature: { kind: 'typed'; text: string } | { kind: 'drawn'; png: Buffer };
  signedAt: Date;
  clientAddress: string;
  /** X-Forwarded-For as the client sent it (a claim, not verified), when present. */
  forwardedFor: string | null;
  signedBy: SignedBy;
  registrationId: string;
}

export interface AuditTrail {
  signed_at: string;
  signer_name: string;
  signer_title: string;
  signer_email: string;
  signature_kind: 'typed' | 'drawn';
  client_address: string;
  forwarded_for: string | null;
  credential: SignedBy['credential'];
  key_id: string;
  key_prefix: string;
  user_id: string | null;
  user_email: string | null;
  unsigned_sha256: string;
}

export const sha256Hex = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

const MARGIN = 64;
const [PAGE_W, PAGE_H] = PageSizes.Letter;
const TEXT_W = PAGE_W - 2 * MARGIN;
// The signature block of the last page of the unsigned letter (points from the bottom left).
const SIG = { signatureY: 430, nameY: 380, titleY: 330, dateY: 280, emailY: 230, valueX: MARGIN + 110, lineEnd: MARGIN + 400 };
const FOOTER_Y = 36;

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October',
  'November', 'December'];
/** A date as a letter writes it: "November 25, 2026" (the UTC date). */
export const letterDate = (d: Date) => `${MONTHS[d.getUTCMonth()]} ${d.getUTCDate()}, ${d.getUTCFullYear()}`;
/** A moment for the audit trail: "November 25, 2026, 15:04:05 UTC". */
export const letterDateTime = (d: Date) => `${letterDate(d)}, ${d.toISOString().slice(11, 19)} UTC`;

/** Text a standard (WinAnsi) font can draw: other characters become "?", so any UTF-8 name still renders. */
function drawable(font: PDFFont, text: string): string {
  const set = charSets.get(font) ?? new Set(font.getCharacterSet());
  charSets.set(font, set);
  let out = '';
  for (const ch of text.normalize('NFC').replace(/[\r\n\t]+/g, ' ')) out += set.has(ch.codePointAt(0)!) ? ch : '?';
  return out;
}
// A per-object memo (the characters one embedded font can draw), gone with the font.
const charSets = new WeakMap<PDFFont, Set<number>>();

function wrap(font: PDFFont, text: string, size: number, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of drawable(font, text).split(/\s+/).filter(Boolean)) {
    const next = line ? `${line} ${word}` : word;
    if (font.widthOfTextAtSize(next, size) <= width || !line) line = next;
    else { lines.push(line); line = word; }
  }
  if (line) lines.push(line);
  return lines;
}

/** Writes lines down pages, adding a page when one is full. */
class Writer {
  page!: PDFPage;
  y = 0;
  constructor(readonly doc: PDFDocument, readonly font: PDFFont, readonly bold: PDFFont) { this.newPage(); }
  newPage() { this.page = this.doc.addPage([PAGE_W, PAGE_H]); this.y = PAGE_H - MARGIN; }
  private room(h: number) { if (this.y - h < MARGIN) this.newPage(); }
  heading(text: string, size = 13) {
    this.room(size + 14);
    this.y -= size + 8;
    this.page.drawText(drawable(this.bold, text), { x: MARGIN, y: this.y, size, font: this.bold });
    this.y -= 6;
  }
  paragraph(text: string, size = 10) {
    for (const l of wrap(this.font, text, size, TEXT_W)) {
      this.room(size + 4);
      this.y -= size + 4;
      this.page.drawText(l, { x: MARGIN, y: this.y, size, font: this.font });
    }
    this.y -= 6;
  }
  /** A label and its value; the value wraps in its column (indent: where it starts; none for an unlabelled line). */
  field(label: string, value: string, o: { size?: number; indent?: number } = {}) {
    const size = o.size ?? 10;
    const indent = o.indent ?? (label ? 170 : 0);
    const lines = wrap(this.font, value || '-', size, TEXT_W - indent);
    lines.forEach((l, i) => {
      this.room(size + 4);
      this.y -= size + 4;
      if (i === 0 && label) this.page.drawText(drawable(this.bold, label), { x: MARGIN, y: this.y, size, font: this.bold });
      this.page.drawText(l, { x: MARGIN + indent, y: this.y, size, font: this.font });
    });
  }
  gap(h: number) { this.y -= h; }
}

/** Prints on each of the pages: what the document is and the registration id (left), "<pageLabel> k of n" (right). */
function footers(pages: PDFPage[], font: PDFFont, left: string, pageLabel: string) {
  pages.forEach((page, i) => {
    const right = `${pageLabel} ${i + 1} of ${pages.length}`;
    const style = { y: FOOTER_Y, size: 8, font, color: rgb(0.35, 0.35, 0.35) };
    page.drawText(drawable(font, left), { x: MARGIN, ...style });
    page.drawText(right, { x: PAGE_W - MARGIN - font.widthOfTextAtSize(right, 8), ...style });
  });
}

const addressLine = (a: BusinessDetails['registered_address']) =>
  [a.line1, a.line2, `${a.city}, ${a.state} ${a.postal_code}`, a.country].filter(Boolean).join(', ');

/** The unsigned LOA, a letter from the business to the platform operator: date, To/From/Re, the authorization, the
 *  business details, the covered numbers, and a signature page to sign. Every page names the registration and is
 *  numbered "Page k of n". */
export async function renderUnsignedLoa(registrationId: string, d: BusinessDetails, provider: LetterParty, generatedAt: Date): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  doc.setTitle(`${LOA_TITLE} - ${drawableAscii(d.legal_name)}`);
  doc.setSubject(`Enterprise registration ${registrationId}`);
  doc.setProducer('openline caller trust');
  doc.setCreator('openline caller trust');
  doc.setCreationDate(generatedAt);
  doc.setModificationDate(generatedAt);
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const bold = await doc.embedFont(StandardFonts.HelveticaBold);
  const w = new Writer(doc, font, bold);
  const numbers = d.phone_numbers.length;
  w.heading('Letter of Authorization', 16);
  w.paragraph('Branded Calling and Caller Identity', 11);
  w.gap(4);
  w.paragraph(letterDate(generatedAt), 10);
  const party = (label: string, name: string, address: string) => {
    w.field(label, name, { indent: 50 });
    w.field('', address, { indent: 50 });
    w.gap(6);
  };
  party('To:', provider.name, provider.address);
  party('From:', d.legal_name, addressLine(d.registered_address));
  w.field('Re:', `Authorization to register and present caller identity for ${numbers} telephone number${numbers === 1 ? '' : 's'}`, { indent: 50 });
  w.gap(10);
  for (const p of authorizationText(d, provider)) w.paragraph(p);
  w.heading('The Business');
  w.field('Legal business name', d.legal_name);
  w.field('EIN', d.ein);
  w.field('Business type', BUSINESS_TYPE_LABELS[d.business_type]);
  w.field('Industry', d.industry);
  w.field('Website', d.website);
  w.field('Registered address', addressLine(d.registered_address));
  w.heading('Authorized contact');
  w.field('Name', d.authorized_contact.name);
  w.field('Title', d.authorized_contact.title);
  w.field('Email', d.authorized_contact.email);
  w.field('Phone', d.authorized_contact.phone);
  w.heading(`Telephone numbers covered (${numbers})`);
  // Four columns of numbers per line.
  for (let i = 0; i < numbers; i += 4) w.field('', d.phone_numbers.slice(i, i + 4).join('      '));

  // The signature page: the block at fixed coordinates (see SIG).
  w.newPage();
  const page = w.page;
  page.drawText('Signature', { x: MARGIN, y: PAGE_H - MARGIN - 15, size: 15, font: bold });
  const intro = wrap(font, `Signed for and on behalf of ${d.legal_name} (EIN ${d.ein}), authorizing ${provider.name} as set `
    + 'out in this letter for the telephone numbers it lists.', 10, TEXT_W);
  intro.forEach((l, i) => page.drawText(l, { x: MARGIN, y: PAGE_H - MARGIN - 40 - i * 14, size: 10, font }));
  for (const [label, y] of [['Signature', SIG.signatureY], ['Name', SIG.nameY], ['Title', SIG.titleY], ['Date', SIG.dateY],
    ['Email', SIG.emailY]] as const) {
    page.drawText(`${label}:`, { x: MARGIN, y, size: 11, font: bold });
    page.drawLine({ start: { x: SIG.valueX, y: y - 4 }, end: { x: SIG.lineEnd, y: y - 4 }, thickness: 0.7, color: rgb(0.3, 0.3, 0.3) });
  }
  footers(doc.getPages(), font, `Letter of Authorization | Registration ${registrationId}`, 'Page');
  return doc.save();
}

const drawableAscii = (s: string) => s.replace(/[^\x20-\x7e]/g, '?');

/** The signed LOA: the unsigned document with the signature block filled in and an audit-trail page appended (its
 *  own numbering: the letter's "Page k of n" stays as signed). */
export async function renderSignedLoa(unsigned: Uint8Array, s: SignatureInput): Promise<{ pdf: Uint8Array; audit: AuditTrail }> {
  const by = s.signedBy;
  const audit: AuditTrail = {
    signed_at: s.signedAt.toISOString(), signer_name: s.signerName, signer_title: s.signerTitle, signer_email: s.signerEmail,
    signature_kind: s.signature.kind, client_address: s.clientAddress, forwarded_for: s.forwardedFor,
    credential: by.credential, key_id: by.keyId, key_prefix: by.keyPrefix, user_id: by.userId, user_email: by.userEmail,
    unsigned_sha256: sha256Hex(unsigned),
  };
  const doc = await PDFDocument.load(unsigned);
  doc.setModificationDate(s.signedAt);
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const bold = await doc.embedFont(StandardFonts.HelveticaBold);
  const page = doc.getPage(doc.getPageCount() - 1);
  if (s.signature.kind === 'typed') {
    await drawScriptSignature(doc, page, s.signature.text,
      { x: SIG.valueX + 4, y: SIG.signatureY, size: 26, maxWidth: SIG.lineEnd - SIG.valueX - 8, color: rgb(0.05, 0.1, 0.45) });
  } else {
    const img = await doc.embedPng(s.signature.png);
    const scale = Math.min((SIG.lineEnd - SIG.valueX) / img.width, 60 / img.height, 1);
    page.drawImage(img, { x: SIG.valueX + 4, y: SIG.signatureY - 2, width: img.width * scale, height: img.height * scale });
  }
  const value = (text: string, y: number) => page.drawText(drawable(font, text), { x: SIG.valueX + 4, y, size: 11, font });
  value(s.signerName, SIG.nameY);
  value(s.signerTitle, SIG.titleY);
  value(letterDate(s.signedAt), SIG.dateY);
  value(s.signerEmail, SIG.emailY);

  const letterPages = doc.getPageCount();
  const trail = new Writer(doc, font, bold);
  trail.heading('Audit trail', 15);
  trail.paragraph('This page records how the letter was signed electronically. The signer gave explicit consent to sign '
    + 'electronically and to be bound by this letter.');
  trail.field('Registration', s.registrationId);
  trail.field('Signed at', letterDateTime(s.signedAt));
  trail.field('Signer', audit.signer_name);
  trail.field('Signer title', audit.signer_title);
  trail.field('Signer email', audit.signer_email);
  trail.field('Signature', audit.signature_kind === 'typed' ? 'typed name (shown in a script face)' : 'drawn image');
  trail.field('Signed with', by.credential === 'session' ? `a console session of the user below (session id ${by.keyId})`
    : `${by.credential === 'client_token' ? 'a client token of API key' : 'API key'} ${by.keyPrefix}... (id ${by.keyId})`);
  trail.field('Key\'s user', by.userId ? `${by.userEmail ?? 'unknown'} (id ${by.userId})` : 'none (an organization key, not a user\'s)');
  trail.field('Client address', audit.client_address);
  if (audit.forwarded_for) trail.field('Forwarded for (claimed)', audit.forwarded_for);
  trail.field('Unsigned document SHA-256', audit.unsigned_sha256, { size: 8 });
  footers(doc.getPages().slice(letterPages), font, `Letter of Authorization | Registration ${s.registrationId}`, 'Audit trail page');
  return { pdf: await doc.save(), audit };
}

/** Whether bytes are a PDF pdf-lib can open, and its page count (0 when not). */
export async function pdfPageCount(bytes: Uint8Array): Promise<number> {
  if (Buffer.from(bytes.subarray(0, 5)).toString('latin1') !== '%PDF-') return 0;
  try {
    return (await PDFDocument.load(bytes, { updateMetadata: false })).getPageCount();
  } catch {
    return 0;
  }
}
