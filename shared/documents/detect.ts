// A document's type, decided from its bytes alone (never its name or the type a client declares): PDF, PNG, JPEG or
// plain UTF-8 text. Anything else (executables, archives, HTML and other markup, damaged files) is refused with why.
import sharp from 'sharp';

export const DOCUMENT_TYPES = ['application/pdf', 'image/png', 'image/jpeg', 'text/plain'] as const;
export type DocumentType = (typeof DOCUMENT_TYPES)[number];

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const JPEG = Buffer.from([0xff, 0xd8, 0xff]);
const PDF = Buffer.from('%PDF-');

/** Signatures of common non-document files, to say what was sent (the answer is a refusal either way). */
const KNOWN: [Buffer, string][] = [
  [Buffer.from('MZ'), 'a Windows executable'], [Buffer.from([0x7f, 0x45, 0x4c, 0x46]), 'an ELF executable'],
  [Buffer.from([0xcf, 0xfa, 0xed, 0xfe]), 'a Mach-O executable'], [Buffer.from('#!'), 'a script'],
  [Buffer.from('PK\x03\x04'), 'a ZIP archive (or an Office document)'], [Buffer.from([0x1f, 0x8b]), 'a gzip archive'],
  [Buffer.from('GIF8'), 'a GIF image'], [Buffer.from('RIFF'), 'a RIFF file (WAV, AVI or WebP)'],
];

/** The start of markup that a browser would render (the WHATWG MIME sniffing HTML/XML patterns), checked on text. */
const MARKUP = /^(?:<!doctype\s+html|<html|<head|<script|<iframe|<h1|<div|<font|<table|<a[\s>]|<style|<title|<b[\s>]|<body|<br|<p[\s>]|<!--|<\?xml|<svg)/i;

export type Detection = { ok: true; type: DocumentType; extension: string } | { ok: false; reason: string };

/** What the bytes are, or why they are refused (one clause, for fields.file). */
export async function detectDocumentType(bytes: Buffer): Promise<Detection> {
  if (bytes.length === 0) return { ok: false, reason: 'is empty' };
  const starts = (sig: Buffer) => bytes.length >= sig.length && bytes.subarray(0, sig.length).equals(sig);
  if (starts(PDF)) {
    // A PDF ends with %%EOF (trailing whitespace or a little junk after it is common): a truncated upload has none.
    const tail = bytes.subarray(Math.max(0, bytes.length - 1024)).toString('latin1');
    return tail.includes('%%EOF') ? { ok: true, type: 'application/pdf', extension: 'pdf' }
      : { ok: false, reason: 'starts like a PDF but is truncated or damaged (no %%EOF at its end)' };
  }
  if (starts(PNG) || starts(JPEG)) {
    const format = starts(PNG) ? 'png' : 'jpeg';
    // The header is read for real (libvips): a signature followed by garbage is not an image.
    const meta = await sharp(bytes, { failOn: 'error' }).metadata().catch(() => null);
    if (!meta || meta.format !== format || !meta.width || !meta.height) {
      return { ok: false, reason: `starts like a ${format.toUpperCase()} image but is not a readable one` };
    }
    return format === 'png' ? { ok: true, type: 'image/png', extension: 'png' } : { ok: true, type: 'image/jpeg', extension: 'jpg' };
  }
  for (const [sig, what] of KNOWN) {
    if (starts(sig)) return { ok: false, reason: `is ${what}; only PDF, PNG, JPEG and plain UTF-8 text are accepted` };
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return { ok: false, reason: 'is not PDF, PNG, JPEG or UTF-8 text (the bytes are binary)' };
  }
  // Control characters other than tab, line feed, form feed and carriage return mark binary data, not text.
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0008\u000b\u000e-\u001f\u007f]/.test(text)) {
    return { ok: false, reason: 'is not plain text (it contains control characters)' };
  }
  if (MARKUP.test(text.replace(/^\uFEFF/, '').trimStart())) {
    return { ok: false, reason: 'is HTML or XML markup; only PDF, PNG, JPEG and plain UTF-8 text are accepted' };
  }
  return { ok: true, type: 'text/plain', extension: 'txt' };
}
