// Documents (/v1/documents): files an organization keeps with the platform. Upload as multipart/form-data (or JSON
// with base64 content), list, read, download (Range), delete. Each purpose is governed by its area's scopes: the
// routes take any of them (the pipeline's any-of scope) and the domain narrows to the document's purpose.
import { Type } from '@sinclair/typebox';
import { fromBase64 } from '../../shared/caller-trust/images.ts';
import type { Config } from '../../shared/config.ts';
import {
  contentDisposition, createDocument, deleteDocument, documentContent, getDocument, listDocuments, NAME_MAX, readablePurposes,
  READ_SCOPES, WRITE_SCOPES, type DocumentRow,
} from '../../shared/documents/documents.ts';
import { DocumentResponse, documentView, PurposeSchema } from '../../shared/documents/schemas.ts';
import { validationError } from '../../shared/errors.ts';
import { PageQuery } from '../../shared/pagination.ts';
import type { Plugin } from '../http/types.ts';
import type { Principal } from '../../shared/accounts/principal.ts';
import { createIn, listFilter, within } from '../../shared/sub-entities/limit.ts';
import { assertSubEntityFilter } from '../../shared/sub-entities/sub-entities.ts';
import { ListMeta, UuidIdParams } from './schemas.ts';

const ID = '01939a4e-7c2b-7a41-9d0e-5f2b8c1d4e6a';
const REG_ID = '01939a4b-1f00-7c3e-8a55-2d4e6f8a0b1c';
const DOCUMENT = {
  id: ID, purpose: 'enterprise_registration', name: 'articles-of-organization.pdf', content_type: 'application/pdf', size_bytes: 184213,
  sha256: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08', registration_id: REG_ID, agent_id: null,
  sub_entity_id: null, content_url: `https://api.example.com/v1/documents/${ID}/content`, created_at: '2026-11-20T15:04:05.000Z',
};

/** What a credential may see of documents, by their sub-entity (the one rule: shared/sub-entities/limit.ts). */
const seesFor = (p: Principal) => (subEntityId: string | null) => within(p, subEntityId);

const SUB_ENTITY_DESCRIPTION = 'The sub-entity it belongs to (one of your organization\'s, else validation_error); omitted: '
  + 'none (a key limited to a sub-entity: its own). While that sub-entity is in HIPAA mode the content is refused.';

/** The body read for an upload: the file limit, base64's growth (JSON bodies) and room for the form's other parts. */
const uploadBodyLimit = (config: Config) => Math.ceil(config.documentsMaxBytes * 4 / 3) + 64 * 1024;

const fields = {
  purpose: Type.Optional(PurposeSchema),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: NAME_MAX,
    description: `A name for it (at most ${NAME_MAX} characters); default: the uploaded file name, else document.<extension>.` })),
  registration_id: Type.Optional(Type.String({ description: 'Attach to this enterprise registration (purpose enterprise_registration).' })),
  agent_id: Type.Optional(Type.String({ description: 'Attach to this agent (purpose agent_knowledge).' })),
};
const UploadBody = Type.Object({
  ...fields,
  sub_entity_id: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: SUB_ENTITY_DESCRIPTION })),
  content_base64: Type.Optional(Type.String({ minLength: 1, description: 'JSON bodies: the file, base64 (standard alphabet).' })),
  content_type: Type.Optional(Type.String({ maxLength: 100,
    description: 'JSON bodies: the type the client believes it is; informational only, the stored type is read from the bytes.' })),
}, { additionalProperties: false });
const UploadForm = Type.Object({
  file: Type.String({ format: 'binary', description: 'The file (a PDF, PNG, JPEG or plain UTF-8 text).' }),
  ...fields,
  sub_entity_id: Type.Optional(Type.String({ description: SUB_ENTITY_DESCRIPTION })),
}, { additionalProperties: false });

const One = Type.Object({ data: DocumentResponse });
const IdParams = UuidIdParams('document');

export const documentRoutes: Plugin = (routes) => {
  routes.add({
    method: 'POST', path: '/v1/documents', scope: WRITE_SCOPES, tag: 'Documents', summary: 'Upload a document',
    description: 'Stores a file with the organization: multipart/form-data with the file in the part `file` and the text '
      + 'fields `purpose`, `name`, `registration_id`, `agent_id`, `sub_entity_id`; or a JSON body with the file in `content_base64`. '
      + 'Accepted: PDF, PNG, JPEG and plain UTF-8 text, decided from the bytes alone (never the file name or a declared '
      + 'type): anything else, such as an executable or an HTML page named .pdf, or a damaged file, is validation_error '
      + 'naming `file`. At most DOCUMENTS_MAX_BYTES (default 10 MB): a larger file is validation_error naming `file`. '
      + 'purpose decides the scope: enterprise_registration needs caller_trust:write, agent_knowledge agents:write '
      + '(otherwise scope_missing naming it); when omitted it follows the attachment (registration_id or agent_id), or '
      + 'the one of the two write scopes the key holds. registration_id attaches it to an enterprise registration of the '
      + 'organization (listed in the registration\'s `documents`), agent_id to an agent. Answers 201 with the document.',
    body: UploadBody,
    upload: {
      maxBodyBytes: uploadBodyLimit, form: UploadForm,
      formDescription: 'multipart/form-data (file part `file`) or JSON (content_base64).',
      encoding: { file: { contentType: 'application/pdf, image/png, image/jpeg, text/plain' } },
      formExample: { file: '%PDF-1.7 (the file\'s bytes)', purpose: 'enterprise_registration', name: 'articles-of-organization.pdf', registration_id: REG_ID },
    },
    examples: {
      request: { purpose: 'enterprise_registration', name: 'articles-of-organization.pdf', registration_id: REG_ID,
        content_base64: 'JVBERi0xLjcKJcfsj6IKMSAwIG9iago8PC9UeXBlL0NhdGFsb2cvUGFnZXMgMiAwIFI+PgplbmRvYmoK...' },
      response: { data: DOCUMENT },
    },
    response: { status: 201, schema: One },
    handler: async (ctx) => {
      const { body, files } = ctx;
      const extra = Object.keys(files).filter((f) => f !== 'file');
      if (extra.length) throw validationError(Object.fromEntries(extra.map((f) => [f, 'is not a file field of this form (use file)'])));
      let bytes: Buffer;
      if (files.file) {
        if (body.content_base64 !== undefined) throw validationError({ content_base64: 'must not be given with a file part' });
        bytes = files.file.data;
      } else if (body.content_base64 !== undefined) {
        const b = fromBase64(body.content_base64);
        if (!b) throw validationError({ content_base64: 'must be base64' });
        bytes = b;
      } else {
        throw validationError({ file: 'is required: a multipart part named file, or content_base64 in a JSON body' });
      }
      const reply = (d: DocumentRow) => ({ status: 201, body: { data: documentView(d, ctx.baseUrl) } });
      const row = await createDocument({ db: ctx.deps.db, storage: ctx.deps.documents, config: ctx.deps.config },
        ctx.principal.organizationId, ctx.principal.scopes,
        { purpose: body.purpose, name: body.name, registration_id: body.registration_id, agent_id: body.agent_id, bytes,
          sub_entity_id: createIn(ctx.principal, body.sub_entity_id),
          filename: files.file?.filename ?? undefined }, ctx.idempotent(reply), seesFor(ctx.principal));
      return reply(row);
    },
  });

  routes.add({
    method: 'GET', path: '/v1/documents', scope: READ_SCOPES, tag: 'Documents', summary: 'List documents',
    description: 'Lists the organization\'s documents that the key may read, newest first: enterprise_registration '
      + 'documents with caller_trust:read, agent_knowledge documents with agents:read (a key with one of them sees only '
      + 'those). Filter by purpose, registration_id, agent_id or sub_entity_id (a key limited to a sub-entity sees only '
      + 'its own); paginated with limit, order and cursor.',
    examples: { response: { data: [DOCUMENT], meta: { page_size: 20 } } },
    query: Type.Object({ ...PageQuery, purpose: Type.Optional(PurposeSchema),
      registration_id: Type.Optional(Type.String({ description: 'Only documents attached to this enterprise registration.' })),
      agent_id: Type.Optional(Type.String({ description: 'Only documents attached to this agent.' })),
      sub_entity_id: Type.Optional(Type.String({ description: 'Only the documents of this sub-entity.' })) }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(DocumentResponse, { description: 'The documents, newest first (or oldest with order=asc).' }), meta: ListMeta }) },
    handler: async ({ deps, principal, query, baseUrl }) => {
      assertSubEntityFilter(query.sub_entity_id);
      const page = deps.cursors.params('documents', query);
      const rows = await listDocuments(deps.db, principal.organizationId, readablePurposes(principal.scopes),
        { purpose: query.purpose, registration_id: query.registration_id, agent_id: query.agent_id,
          sub_entity_id: listFilter(principal, query.sub_entity_id) }, page);
      const out = deps.cursors.page('documents', page, rows, (d) => d.id);
      return { status: 200, body: { data: out.data.map((d) => documentView(d, baseUrl)), meta: out.meta } };
    },
  });

  routes.add({
    method: 'GET', path: '/v1/documents/{id}', scope: READ_SCOPES, tag: 'Documents', summary: 'Read a document',
    description: 'The document\'s metadata. Needs the read scope of its purpose (caller_trust:read or agents:read; '
      + 'otherwise scope_missing naming it); another organization\'s document is not_found.',
    examples: { response: { data: DOCUMENT } },
    params: IdParams, response: { status: 200, schema: One },
    handler: async ({ deps, principal, params, baseUrl }) => ({
      status: 200, body: { data: documentView(await getDocument(deps.db, principal.organizationId, principal.scopes, params.id, seesFor(principal)), baseUrl) },
    }),
  });

  routes.add({
    method: 'GET', path: '/v1/documents/{id}/content', scope: READ_SCOPES, tag: 'Documents', summary: 'Download a document',
    description: 'The document\'s bytes as uploaded, with the Content-Type read from them (application/pdf, image/png, '
      + 'image/jpeg or text/plain; charset=utf-8), Content-Disposition: attachment with its name, and '
      + 'X-Content-Type-Options: nosniff. Accepts one byte range (Range: bytes=a-b, a- or -n) answered 206 with '
      + 'Content-Range; a range starting past the end is 416; several or malformed ranges are ignored (200, whole file). '
      + 'Needs the read scope of its purpose. When this gateway already streams its maximum of files '
      + '(RECORDING_STREAMS_MAX): service_unavailable with Retry-After: 1. While the document\'s sub-entity is in HIPAA '
      + 'mode: 403 content_policy_forbidden (its metadata stays readable).',
    errors: ['content_policy_forbidden'],
    params: IdParams,
    response: { status: 200, contentType: 'application/octet-stream',
      description: 'The bytes (Content-Type: the detected type: application/pdf, image/png, image/jpeg or text/plain; charset=utf-8)' },
    handler: async ({ deps, principal, params }) => {
      const { row, file } = await documentContent({ db: deps.db, storage: deps.documents }, principal.organizationId, principal.scopes, params.id,
        seesFor(principal));
      return {
        status: 200, file,
        headers: {
          'content-type': row.content_type === 'text/plain' ? 'text/plain; charset=utf-8' : row.content_type,
          'content-disposition': contentDisposition(row.name), 'x-content-type-options': 'nosniff',
        },
      };
    },
  });

  routes.add({
    method: 'DELETE', path: '/v1/documents/{id}', scope: WRITE_SCOPES, tag: 'Documents', summary: 'Delete a document',
    description: 'Deletes the document and its file. Needs the write scope of its purpose (caller_trust:write or '
      + 'agents:write). A document attached to an enterprise registration that is PENDING_VETTING or APPROVED is part '
      + 'of its submission: state_conflict (fields.entity enterprise_registration, fields.status). Answers 204.',
    params: IdParams, response: { status: 204, description: 'Deleted' },
    errors: ['state_conflict'],
    handler: async (ctx) => {
      const reply = () => ({ status: 204 });
      await deleteDocument({ db: ctx.deps.db, storage: ctx.deps.documents }, ctx.principal.organizationId, ctx.principal.scopes,
        ctx.params.id, ctx.idempotent(reply), seesFor(ctx.principal));
      return reply();
    },
  });
};
