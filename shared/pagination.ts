import { createHmac, timingSafeEqual } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { systemClock, type Clock } from './clock.ts';
import { validationError } from './errors.ts';

// One cursor scheme for every list: keyset pagination on a strictly ordered sort key (the row id, which follows
// creation order: bigserial or UUIDv7). The cursor is opaque, signed, and names the list it belongs to.

export const CURSOR_TTL_MS = 24 * 3600_000;
export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

export const PageQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE,
    description: 'Page size, 1 to 100.' })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'Opaque cursor from meta.cursor; valid 24 hours.' })),
  // No schema default here: Ajv would fill it in, and a filled-in 'desc' would contradict the order of an asc
  // cursor that the client follows without repeating order=asc. Absent means desc, or the cursor's own order.
  order: Type.Optional(Type.Union([Type.Literal('desc'), Type.Literal('asc')], {
    description: 'desc: newest first (default); asc: oldest first. A cursor keeps the order it was issued with.' })),
};

export type Order = 'asc' | 'desc';
export interface PageParams { limit: number; order: Order; after: string | number | null }

interface CursorBody { l: string; k: string | number; o: Order; t: number }

export class Cursors {
  constructor(private readonly secret: Buffer, private readonly clock: Clock = systemClock) {}

  private sign(payload: string): string {
    return createHmac('sha256', this.secret).update(payload).digest('base64url').slice(0, 22);
  }

  encode(list: string, key: string | number, order: Order, issuedAt = this.clock.now()): string {
    const payload = Buffer.from(JSON.stringify({ l: list, k: key, o: order, t: issuedAt } satisfies CursorBody)).toString('base64url');
    return `${payload}.${this.sign(payload)}`;
  }

  /** Reads the paging parameters of a request to `list`; a tampered, foreign or expired cursor is a 400. */
  params(list: string, q: { limit?: number; cursor?: string; order?: Order }): PageParams {
    const limit = q.limit ?? DEFAULT_PAGE_SIZE;
    if (!q.cursor) return { limit, order: q.order ?? 'desc', after: null };
    const [payload, sig] = q.cursor.split('.');
    const expected = payload ? this.sign(payload) : '';
    if (!payload || !sig || sig.length !== expected.length || !timingSafeEqual(Buffer.from(sig), Buffer.from(expected))) {
      throw validationError({ cursor: 'is not a valid cursor' }, 'The cursor is invalid; start again from the first page.');
    }
    let body: CursorBody;
    try {
      body = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      throw validationError({ cursor: 'is not a valid cursor' });
    }
    if (body.l !== list) throw validationError({ cursor: 'belongs to another list' });
    if (this.clock.now() - body.t > CURSOR_TTL_MS) {
      throw validationError({ cursor: 'has expired (cursors are valid 24 hours)' }, 'The cursor has expired; start again from the first page.');
    }
    if (q.order && q.order !== body.o) throw validationError({ order: `must match the cursor's order (${body.o})` });
    return { limit, order: body.o, after: body.k };
  }

  /** Builds the list envelope from `limit + 1` fetched rows. */
  page<T>(list: string, p: PageParams, rows: T[], keyOf: (row: T) => string | number, total?: number) {
    const more = rows.length > p.limit;
    const data = more ? rows.slice(0, p.limit) : rows;
    const meta: { cursor?: string; total_results?: number; page_size: number } = { page_size: p.limit };
    if (more) meta.cursor = this.encode(list, keyOf(data[data.length - 1]), p.order);
    if (total !== undefined) meta.total_results = total;
    return { data, meta };
  }
}

/** The SQL fragment for a keyset page on `column`: "AND column < $after ORDER BY column DESC LIMIT n+1". */
export function keysetClause(column: string, p: PageParams, paramIndex: number): { where: string; tail: string; values: unknown[] } {
  const op = p.order === 'desc' ? '<' : '>';
  return {
    where: p.after === null ? '' : ` AND ${column} ${op} $${paramIndex}`,
    tail: ` ORDER BY ${column} ${p.order === 'desc' ? 'DESC' : 'ASC'} LIMIT ${p.limit + 1}`,
    values: p.after === null ? [] : [p.after],
  };
}
