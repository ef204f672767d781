// Request bodies of the control API checked against their TypeBox schemas; a bad one is a 400 naming each field.
import type { Static, TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject } from 'ajv';
import { ControlError } from './errors.ts';

const ajv = new Ajv({ allErrors: true, strict: false, coerceTypes: false });

/** "/rtpParameters/codecs/0/mimeType" -> "rtpParameters.codecs[0].mimeType" */
function fieldPath(pointer: string): string {
  return pointer.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((acc, seg) => (/^\d+$/.test(seg) ? `${acc}[${seg}]` : acc ? `${acc}.${seg}` : seg), '');
}

function explain(e: ErrorObject): [string, string] {
  const at = fieldPath(e.instancePath);
  const join = (name: string) => (at ? `${at}.${name}` : name);
  switch (e.keyword) {
    case 'required': return [join((e.params as { missingProperty: string }).missingProperty), 'is required'];
    case 'additionalProperties': return [join((e.params as { additionalProperty: string }).additionalProperty), 'is not a recognized field'];
    case 'const': return [at, `must be ${JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)}`];
    case 'anyOf': return [at, 'does not match any allowed form'];
    default: return [at, e.message ?? 'is invalid'];
  }
}

export function compileBody<S extends TSchema>(schema: S): (body: unknown) => Static<S> {
  const fn = ajv.compile(schema);
  return (body) => {
    if (fn(body)) return body as Static<S>;
    const fields: Record<string, string> = {};
    const errors = fn.errors ?? [];
    // A union reports every branch; the branch errors are noise next to its summary unless it is the only error.
    const specific = errors.filter((e) => !e.schemaPath.includes('/anyOf/'));
    for (const e of specific.length ? specific : errors) {
      const [k, msg] = explain(e);
      fields[k || 'body'] ??= msg;
    }
    throw new ControlError('validation_error', 'the request body is invalid', fields);
  };
}
