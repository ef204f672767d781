// POST /v1/phone-numbers/import: an owner brings the DIDs their SIP trunk provider sold onto the organization
// (the rules are shared/numbers/import.ts's, shared with the operator CLI's `number import`).
import { Type } from '@sinclair/typebox';
import { assertNumbersImportable, checkImportNumbers, IMPORT_BATCH_MAX, importNumbers, type ImportSummary } from '../../shared/numbers/import.ts';
import { assertWholeOrganization } from '../../shared/sub-entities/limit.ts';
import type { Plugin, Reply } from '../http/types.ts';
import { DETAIL_EXAMPLE, PhoneNumberDetail } from './phone-number-lifecycle.ts';

const ImportResult = Type.Object({
  phone_number: Type.String({ description: 'The number as given.' }),
  result: Type.Union([Type.Literal('imported'), Type.Literal('already_held'), Type.Literal('refused')], {
    description: 'imported: the organization holds it now (ACTIVE). already_held: it held it already, nothing changed. '
      + 'refused: another organization holds it (see error).' }),
  number: Type.Optional(PhoneNumberDetail),
  error: Type.Optional(Type.Object({
    code: Type.Literal('number_unavailable', { description: 'The number is held by another organization.' }),
    message: Type.String({ description: 'What happened.' }),
  }, { description: 'Why the number was refused (result refused only).' })),
}, { description: 'What the import did with one number.' });

const EXAMPLE_NUMBER = { ...DETAIL_EXAMPLE, provider: 'sip', source: 'imported', cnam_status: 'pending' };

export const phoneNumberImportRoutes: Plugin = (routes) => {
  routes.add({
    method: 'POST', path: '/v1/phone-numbers/import', scope: 'phone_numbers:write', tag: 'Phone Numbers', changesAccount: true,
    summary: 'Import numbers from the SIP trunk',
    description: `Brings numbers (DIDs) that your SIP trunk provider sold onto the organization: each becomes ACTIVE at once `
      + `(source imported, provider sip) and fires number_purchased, then places calls, enters Number Health and is `
      + `released like a bought number. 1 to ${IMPORT_BATCH_MAX} distinct E.164 numbers per request; a malformed or repeated `
      + 'entry answers validation_error naming it (numbers[i]) and imports nothing. Each number gets its own result: '
      + 'imported, already_held (importing again changes nothing) or refused (another organization holds it: '
      + 'number_unavailable). Only with the SIP trunk carrier (CARRIER=sip); with another carrier it answers '
      + 'numbers_not_importable (409): buy numbers with POST /v1/phone-numbers there. The platform cannot ask the '
      + 'provider whether the trunk really carries a number: import only numbers routed to this trunk.',
    examples: {
      request: { numbers: ['+14155550100', '+14155550101'], name: 'Support line' },
      response: {
        data: [
          { phone_number: '+14155550100', result: 'imported', number: { ...EXAMPLE_NUMBER, phone_number: '+14155550100', name: 'Support line' } },
          { phone_number: '+14155550101', result: 'refused', error: { code: 'number_unavailable', message: 'This number is held by another organization.' } },
        ],
        meta: { imported: 1, already_held: 0, refused: 1 },
      },
    },
    body: Type.Object({
      numbers: Type.Array(Type.String({ maxLength: 16, description: 'A number in E.164 form.' }), {
        minItems: 1, maxItems: IMPORT_BATCH_MAX, description: `The numbers to import, 1 to ${IMPORT_BATCH_MAX}, each once.` }),
      name: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'A label for the imported numbers (default: the number itself).' })),
    }, { additionalProperties: false }),
    response: {
      status: 200,
      schema: Type.Object({
        data: Type.Array(ImportResult, { description: 'One result per number, in the order given.' }),
        meta: Type.Object({
          imported: Type.Integer({ description: 'Numbers imported now.' }),
          already_held: Type.Integer({ description: 'Numbers the organization held already.' }),
          refused: Type.Integer({ description: 'Numbers held by another organization.' }),
        }, { description: 'How many numbers got each result.' }),
      }),
    },
    errors: ['numbers_not_importable', 'forbidden'],
    handler: async (ctx) => {
      const { deps, principal, body } = ctx;
      assertWholeOrganization(principal, 'importing numbers');
      assertNumbersImportable(deps.config.carrier);
      const numbers = checkImportNumbers(body.numbers);
      const reply = (s: ImportSummary) => ({
        status: 200, body: { data: s.results, meta: { imported: s.imported, already_held: s.already_held, refused: s.refused } },
      });
      return reply(await importNumbers(deps.db, principal, numbers, { name: body.name }, ctx.idempotent(reply)));
    },
  });
};
