import sharp, { type Metadata } from 'sharp';

// Images we accept from clients (DIR logos, drawn LOA signatures) are decoded for real with libvips (sharp): the
// format is what the bytes decode as, never what the client says, every pixel is decoded (a truncated or forged
// body fails), and what we keep is our own re-encoding, without the uploaded metadata (EXIF, XMP, ICC, text chunks).

export type ImageFormat = 'png' | 'jpeg' | 'webp';
export const MIME_FORMAT: Record<string, ImageFormat> = { 'image/png': 'png', 'image/jpeg': 'jpeg', 'image/webp': 'webp' };

export interface DecodedImage { format: ImageFormat; width: number; height: number; png: Buffer }

/** Why the bytes are refused (one sentence), or the decoded image re-encoded as PNG (at most maxSide px a side). */
export async function decodeImage(bytes: Buffer, o: { formats: ImageFormat[]; maxSide: number; limitPixels: number }):
  Promise<{ ok: true; image: DecodedImage } | { ok: false; reason: string }> {
  let meta: Metadata;
  try {
    meta = await sharp(bytes, { failOn: 'error', limitInputPixels: o.limitPixels }).metadata();
  } catch {
    return { ok: false, reason: `is not a decodable ${o.formats.join(', ').toUpperCase()} image` };
  }
  const format: string | undefined = meta.format;
  if (!o.formats.includes(format as ImageFormat)) return { ok: false, reason: `must be ${o.formats.join(', ').toUpperCase()} (the bytes are ${meta.format ?? 'unknown'})` };
  try {
    // rotate() applies the EXIF orientation before the metadata is dropped; toBuffer decodes every pixel.
    const png = await sharp(bytes, { failOn: 'error', limitInputPixels: o.limitPixels })
      .rotate().resize({ width: o.maxSide, height: o.maxSide, fit: 'inside', withoutEnlargement: true })
      .png({ compressionLevel: 9 }).toBuffer();
    const width = meta.autoOrient?.width ?? meta.width ?? 0;
    const height = meta.autoOrient?.height ?? meta.height ?? 0;
    return { ok: true, image: { format: format as ImageFormat, width, height, png } };
  } catch {
    return { ok: false, reason: `is not a decodable ${String(format).toUpperCase()} image (the data is damaged or not what its header says)` };
  }
}

/** Base64 text to bytes, or null when it is not base64 (standard alphabet, padding optional). */
export function fromBase64(s: string): Buffer | null {
  const t = s.replace(/\s+/g, '');
  if (!t.length || !/^[A-Za-z0-9+/]+={0,2}$/.test(t) || t.length % 4 === 1) return null;
  return Buffer.from(t, 'base64');
}
