import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { inflateSync } from 'node:zlib';
import fontkit from '@pdf-lib/fontkit';
import type { PDFDocument, PDFFont, PDFPage, RGB } from 'pdf-lib';

// The script face of a typed signature: Dancing Script (SIL Open Font License 1.1), from the npm package
// @fontsource/dancing-script, embedded (subset) into the PDF. The package splits the face by script into files; a
// signature is drawn in runs, each character from the first file that has it (Latin, then Latin Extended, then
// Vietnamese), so "Łukasz Nguyễn" prints whole; a character none has prints as "?".

const SUBSETS = ['latin', 'latin-ext', 'vietnamese'] as const;
type Subset = (typeof SUBSETS)[number];

const require = createRequire(import.meta.url);
interface SubsetFile { bytes: Buffer; font: fontkit.Font; chars: Set<number> }
const files = new Map<Subset, SubsetFile>();

/** The font file of a subset, read and parsed once per process, and the characters it has. */
function subsetFile(subset: Subset): SubsetFile {
  let f = files.get(subset);
  if (!f) {
    const bytes = woffToSfnt(readFileSync(require.resolve(`@fontsource/dancing-script/files/dancing-script-${subset}-400-normal.woff`)));
    const font = fontkit.create(bytes);
    f = { bytes, font, chars: new Set(font.characterSet) };
    files.set(subset, f);
  }
  return f;
}

/** A WOFF 1.0 file as the plain TrueType (sfnt) font it wraps: each table inflated once. fontkit reads a WOFF's
 *  tables compressed and inflates one (in JavaScript) on every access, many times per subset it writes. WOFF layout:
 *  a 44-byte header (flavor at 4, numTables at 12), then 20-byte entries (tag, offset, compLength, origLength,
 *  checksum), sorted by tag as sfnt wants; a table is stored raw when compLength equals origLength. */
export function woffToSfnt(woff: Buffer): Buffer {
  if (woff.toString('latin1', 0, 4) !== 'wOFF') throw new Error('not a WOFF 1.0 font');
  const n = woff.readUInt16BE(12);
  const tables = Array.from({ length: n }, (_, i) => {
    const e = 44 + i * 20;
    const [offset, compLength, origLength] = [woff.readUInt32BE(e + 4), woff.readUInt32BE(e + 8), woff.readUInt32BE(e + 12)];
    const stored = woff.subarray(offset, offset + compLength);
    return { tag: woff.readUInt32BE(e), checksum: woff.readUInt32BE(e + 16), data: compLength < origLength ? inflateSync(stored) : stored };
  });
  const pad4 = (x: number) => (x + 3) & ~3;
  const header = 12 + 16 * n;
  const out = Buffer.alloc(tables.reduce((size, t) => size + pad4(t.data.length), header));
  const log2 = Math.floor(Math.log2(n));
  out.writeUInt32BE(woff.readUInt32BE(4), 0);
  out.writeUInt16BE(n, 4);
  out.writeUInt16BE(2 ** log2 * 16, 6);
  out.writeUInt16BE(log2, 8);
  out.writeUInt16BE(n * 16 - 2 ** log2 * 16, 10);
  let at = header;
  tables.forEach((t, i) => {
    out.writeUInt32BE(t.tag, 12 + i * 16);
    out.writeUInt32BE(t.checksum, 16 + i * 16);
    out.writeUInt32BE(at, 20 + i * 16);
    out.writeUInt32BE(t.data.length, 24 + i * 16);
    t.data.copy(out, at);
    at += pad4(t.data.length);
  });
  return out;
}

/** fontkit for pdf-lib, answering the already parsed font for our files: pdf-lib parses the bytes it embeds on every
 *  call, and parsing (with the first layout) is about half of a signature's cost. pdf-lib only reads the font. */
const cachedFontkit = {
  create(bytes: Uint8Array, postscriptName?: string): fontkit.Font {
    for (const f of files.values()) if (f.bytes === bytes) return f.font;
    return fontkit.create(bytes, postscriptName);
  },
};

/** The typed text as runs of one subset each ("?" for characters no subset has). */
function runs(text: string): { subset: Subset; text: string }[] {
  const out: { subset: Subset; text: string }[] = [];
  for (let ch of text.normalize('NFC').replace(/\s+/g, ' ')) {
    let subset = SUBSETS.find((s) => subsetFile(s).chars.has(ch.codePointAt(0)!));
    if (!subset) { subset = 'latin'; ch = '?'; }
    const last = out[out.length - 1];
    if (last?.subset === subset) last.text += ch;
    else out.push({ subset, text: ch });
  }
  return out;
}

/** Draws a typed signature at (x, y) in the script face, at `size` or smaller so it fits in maxWidth. */
export async function drawScriptSignature(doc: PDFDocument, page: PDFPage, text: string,
  at: { x: number; y: number; size: number; maxWidth: number; color: RGB }): Promise<void> {
  doc.registerFontkit(cachedFontkit);
  const fonts = new Map<Subset, PDFFont>();
  const parts: { font: PDFFont; text: string }[] = [];
  for (const r of runs(text)) {
    let font = fonts.get(r.subset);
    if (!font) { font = await doc.embedFont(subsetFile(r.subset).bytes, { subset: true }); fonts.set(r.subset, font); }
    parts.push({ font, text: r.text });
  }
  const width = (size: number) => parts.reduce((w, p) => w + p.font.widthOfTextAtSize(p.text, size), 0);
  const size = Math.max(6, Math.min(at.size, at.size * at.maxWidth / (width(at.size) || 1)));
  let x = at.x;
  for (const p of parts) {
    page.drawText(p.text, { x, y: at.y, size, font: p.font, color: at.color });
    x += p.font.widthOfTextAtSize(p.text, size);
  }
}
