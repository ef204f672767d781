// Where documents' bytes are kept. The domain (documents.ts) writes a file before its row and deletes it after the
// row, so every visible document has its file; what a crash can leave is an orphan file, which sweepOrphans
// (documents.ts) removes. File names are document ids (UUIDs), never anything a client sent.
import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { isUuid } from '../ids.ts';

/** A stored file as the gateway's file streams send it (Reply.file). */
export interface StoredFile { path: string; size: number }

export interface DocumentStorage {
  /** Stores the bytes under id, atomically: a reader sees the whole file or none. */
  put(id: string, bytes: Buffer): Promise<void>;
  /** The file of id, or null when there is none. */
  file(id: string): Promise<StoredFile | null>;
  /** Removes the file of id (nothing when there is none). */
  remove(id: string): Promise<void>;
  /** Every stored id with when it was written, and leftovers of interrupted writes (for the orphan sweep). */
  list(): Promise<{ ids: { id: string; modifiedAt: Date }[]; partial: { name: string; modifiedAt: Date }[] }>;
  /** Removes a leftover of an interrupted write named by list(). */
  removePartial(name: string): Promise<void>;
}

const TEMP_SUFFIX = '.partial';

/** Local disk: one file per document in dir, written as <id>.<random>.partial, flushed, then renamed to <id>. */
export class LocalDocumentStorage implements DocumentStorage {
  private ready: Promise<unknown> | null = null;
  constructor(readonly dir: string) {}

  private ensureDir() {
    return (this.ready ??= mkdir(this.dir, { recursive: true, mode: 0o700 }).catch((err) => { this.ready = null; throw err; }));
  }

  private pathOf(id: string): string {
    if (!isUuid(id)) throw new Error(`not a document id: ${id}`);
    return join(this.dir, id);
  }

  async put(id: string, bytes: Buffer): Promise<void> {
    const target = this.pathOf(id);
    await this.ensureDir();
    const temp = join(this.dir, `${id}.${randomBytes(6).toString('hex')}${TEMP_SUFFIX}`);
    try {
      const fh = await open(temp, 'wx', 0o600);
      try {
        await fh.writeFile(bytes);
        await fh.sync();
      } finally {
        await fh.close();
      }
      await rename(temp, target);
    } catch (err) {
      await rm(temp, { force: true });
      throw err;
    }
  }

  async file(id: string): Promise<StoredFile | null> {
    const path = this.pathOf(id);
    try {
      const s = await stat(path);
      return s.isFile() ? { path, size: s.size } : null;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  async remove(id: string): Promise<void> {
    await rm(this.pathOf(id), { force: true });
  }

  async list() {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { ids: [], partial: [] };
      throw err;
    }
    const ids: { id: string; modifiedAt: Date }[] = [];
    const partial: { name: string; modifiedAt: Date }[] = [];
    for (const name of names) {
      const isId = isUuid(name);
      if (!isId && !name.endsWith(TEMP_SUFFIX)) continue;
      const s = await stat(join(this.dir, name)).catch(() => null);
      if (!s) continue;
      if (isId) ids.push({ id: name, modifiedAt: s.mtime });
      else partial.push({ name, modifiedAt: s.mtime });
    }
    return { ids, partial };
  }

  async removePartial(name: string): Promise<void> {
    if (!name.endsWith(TEMP_SUFFIX) || name.includes('/')) throw new Error(`not a partial document file: ${name}`);
    await rm(join(this.dir, name), { force: true });
  }
}

/** The process's document storage as configured: local disk under DOCUMENTS_DIR (the one adapter so far). */
export const documentStorage = (config: { documentsDir: string }): DocumentStorage => new LocalDocumentStorage(config.documentsDir);
