import type { TSchema } from '@sinclair/typebox';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { validationError } from '../../shared/errors.ts';
import { fieldMap } from './request-guards.ts';
import { explainAjvError } from '../../shared/ajv-fields.ts';

// ajv-formats is CommonJS: under NodeNext its function sits on .default.
const addFormats = (addFormatsModule as unknown as { default: (a: Ajv) => Ajv }).default;

// Two compilers: JSON bodies keep their types; query strings and path parameters are text, so they are coerced.
const bodyAjv = new Ajv({ allErrors: true, useDefaults: true, strict: false, coerceTypes: false });
const textAjv = new Ajv({ allErrors: true, useDefaults: true, strict: false, coerceTypes: true });
addFormats(bodyAjv);
addFormats(textAjv);

// Ajv coerces text with Number(), which takes "0x10", " 10", "1e1" and "+10": numbers in paths and query strings
// must be written in plain decimal, checked before coercion.
const DECIMAL: Record<string, [RegExp, string]> = {
  integer: [/^-?[0-9]+$/, 'must be a decimal integer (at most 2^53 - 1)'],
  number: [/^-?[0-9]+(\.[0-9]+)?$/, 'must be a decimal number'],
};

/** The numeric properties of a text (query or path) schema, with the spelling each must have. */
function numericProperties(schema: TSchema): [string, RegExp, string][] {
  const props = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  return Object.entries(props).flatMap(([name, p]) => {
    const rule = typeof p.type === 'string' ? DECIMAL[p.type] : undefined;
    return rule ? [[name, rule[0], rule[1]] as [string, RegExp, string]] : [];
  });
}

/** Compiled once per route at start-up; throws validation_error naming every bad field. */
export function compileValidator(schema: TSchema, kind: 'body' | 'query' | 'params'): (v: unknown) => void {
  const ajv = kind === 'body' ? bodyAjv : textAjv;
  const fn: ValidateFunction = ajv.compile(schema);
  const numeric = kind === 'body' ? [] : numericProperties(schema);
  return (value: unknown) => {
    const fields = fieldMap();
    for (const [name, re, msg] of numeric) {
      const v = (value as Record<string, unknown>)[name];
      if (typeof v !== 'string') continue;
      const n = Number(v);
      if (!re.test(v) || (re === DECIMAL.integer[0] ? !Number.isSafeInteger(n) : !Number.isFinite(n))) fields[name] = msg;
    }
    if (fn(value)) {
      for (const _ in fields) throw validationError(fields);
      return;
    }
    for (const e of fn.errors ?? []) {
      // anyOf reports each branch too; the specific branch errors are noise next to its summary.
      if (e.schemaPath.includes('/anyOf/')) continue;
      const [k, msg] = explainAjvError(e);
      const key = k || kind;
      if (!fields[key]) fields[key] = msg;
    }
    throw validationError(fields);
  };
}
