// Request bodies of the control API checked against their TypeBox schemas; a bad one is a 400 naming each field.
import type { Static, TSchema } from '@sinclair/typebox';
import { Ajv } from 'ajv';
import { ControlError } from './errors.ts';
import { explainAjvError } from '../shared/ajv-fields.ts';

const ajv = new Ajv({ allErrors: true, strict: false, coerceTypes: false });

export function compileBody<S extends TSchema>(schema: S): (body: unknown) => Static<S> {
  const fn = ajv.compile(schema);
  return (body) => {
    if (fn(body)) return body as Static<S>;
    const fields: Record<string, string> = {};
    const errors = fn.errors ?? [];
    // A union reports every branch; the branch errors are noise next to its summary unless it is the only error.
    const specific = errors.filter((e) => !e.schemaPath.includes('/anyOf/'));
    for (const e of specific.length ? specific : errors) {
      const [k, msg] = explainAjvError(e);
      fields[k || 'body'] ??= msg;
    }
    throw new ControlError('validation_error', 'the request body is invalid', fields);
  };
}
