// Building blocks of the response schemas that sit beside the views (shared/<area>/views.ts): the envelopes and
// the nullable field. TypeBox, so a view is typed from its schema (Static<typeof S>).
import { Type, type TSchema } from '@sinclair/typebox';

/** A field that is the schema's type or null; the description goes on the field (the union). */
export const Nullable = <T extends TSchema>(s: T, description?: string) =>
  Type.Union([s, Type.Null()], description ? { description } : {});

/** meta of every list envelope. */
export const ListMeta = Type.Object({
  cursor: Type.Optional(Type.String({ description: 'Pass as ?cursor= to get the next page; absent on the last page.' })),
  total_results: Type.Optional(Type.Integer({ description: 'How many items the whole list has (lists that count them).' })),
  page_size: Type.Integer({ description: 'The page size used (the limit).' }),
}, { description: 'Paging information.' });
