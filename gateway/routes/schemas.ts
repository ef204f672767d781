import { Type } from '@sinclair/typebox';

// The envelopes' building blocks live beside the views (shared/response-schemas.ts); the routes import them here too.
export { ListMeta, Nullable } from '../../shared/response-schemas.ts';

/** Path parameter {id} of resources with uuid ids. */
export const UuidIdParams = (what: string) => Type.Object({ id: Type.String({ description: `The ${what} id (uuid).` }) });

/** The start of a free-form map's key pattern: never a name that reaches a prototype (such a key is refused as an
 *  unknown field, as in every other body). */
export const NOT_PROTOTYPE_KEY = '^(?!(__proto__|constructor|toString|hasOwnProperty)$)';
