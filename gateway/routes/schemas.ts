import { Type } from '@sinclair/typebox';

/** meta of every list envelope. */
export const ListMeta = Type.Object({
  cursor: Type.Optional(Type.String()),
  total_results: Type.Optional(Type.Integer()),
  page_size: Type.Integer(),
});
