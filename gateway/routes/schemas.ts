import { Type } from '@sinclair/typebox';

// The envelopes' building blocks live beside the views (shared/response-schemas.ts); the routes import them here too.
export { ListMeta, Nullable } from '../../shared/response-schemas.ts';

/** Path parameter {id} of resources with uuid ids. */
export const UuidIdParams = (what: string) => Type.Object({ id: Type.String({ description: `The ${what} id (uuid).` }) });
