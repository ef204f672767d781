import { Type, type TSchema } from '@sinclair/typebox';

/** A field that is the schema's type or null. */
export const Nullable = <T extends TSchema>(s: T) => Type.Union([s, Type.Null()]);

/** meta of every list envelope. */
export const ListMeta = Type.Object({
  cursor: Type.Optional(Type.String()),
  total_results: Type.Optional(Type.Integer()),
  page_size: Type.Integer(),
});
