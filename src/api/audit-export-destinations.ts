import { Type, type Static } from 'typebox';
import { IdParamsSchema, PaginationQuery } from './schemas.js';
import { NoContent, type RouteDef } from './route-def.js';

// Audit-log export destinations (Kernel's /audit-logs/export/destinations): an organization's
// audit log delivered continuously to an S3 bucket, as gzipped JSON lines, through an AWS role the
// organization lets rbrowse assume.

const strict = { additionalProperties: false } as const;
const Bucket = Type.String({ minLength: 3, maxLength: 63, pattern: '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$', description: 'An S3 bucket name' });
const Prefix = Type.String({ maxLength: 512, pattern: '^[^\\u0000-\\u001f]*$', description: 'Object keys start with it (no trailing slash needed)' });
const Region = Type.String({
  minLength: 1,
  maxLength: 32,
  pattern: '^[a-z]{2}(-[a-z0-9]+)+-\\d+$',
  description: "The bucket's AWS region, as us-east-1",
});
const RoleArn = Type.String({
  maxLength: 2048,
  pattern: '^arn:aws[a-z-]*:iam::\\d{12}:role/.+$',
  description: 'The role in your account that rbrowse assumes to write',
});
const KmsKeyId = Type.String({ maxLength: 2048, description: 'A KMS key id, alias or ARN for SSE-KMS' });

export const AuditLogExportDestinationSchema = Type.Object({
  id: Type.String(),
  type: Type.Literal('s3'),
  bucket: Type.String(),
  prefix: Type.String(),
  region: Type.String(),
  role_arn: Type.String(),
  kms_key_id: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  format: Type.Literal('jsonl.gz'),
  status: Type.Union([Type.Literal('active'), Type.Literal('paused')], {
    description: 'paused: no delivery; events recorded meanwhile are never exported',
  }),
  external_id: Type.String({ description: "Required as sts:ExternalId in the role's trust policy; new for each destination" }),
  kernel_role_arn: Type.String({ description: "The principal that assumes role_arn: allow it in the role's trust policy" }),
  consecutive_failures: Type.Integer(),
  last_error: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  last_error_at: Type.Optional(Type.Union([Type.String({ format: 'date-time' }), Type.Null()])),
  last_success_at: Type.Optional(Type.Union([Type.String({ format: 'date-time' }), Type.Null()])),
  last_exported_cursor: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  next_attempt_at: Type.Optional(Type.Union([Type.String({ format: 'date-time' }), Type.Null()])),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});
export type AuditLogExportDestination = Static<typeof AuditLogExportDestinationSchema>;

export const CreateAuditLogExportDestinationSchema = Type.Object(
  {
    type: Type.Literal('s3'),
    bucket: Bucket,
    prefix: Prefix,
    region: Region,
    role_arn: RoleArn,
    format: Type.Literal('jsonl.gz'),
    kms_key_id: Type.Optional(KmsKeyId),
  },
  strict,
);
export type CreateAuditLogExportDestinationBody = Static<typeof CreateAuditLogExportDestinationSchema>;

export const UpdateAuditLogExportDestinationSchema = Type.Object(
  {
    bucket: Type.Optional(Bucket),
    prefix: Type.Optional(Prefix),
    region: Type.Optional(Region),
    role_arn: Type.Optional(RoleArn),
    kms_key_id: Type.Optional(Type.Union([KmsKeyId, Type.Null()], { description: '"" removes the key; null or absent leaves it' })),
    status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('paused')], { description: 'Resuming delivers from the resume on' })),
  },
  strict,
);
export type UpdateAuditLogExportDestinationBody = Static<typeof UpdateAuditLogExportDestinationSchema>;

export const AuditLogExportDestinationTestResultSchema = Type.Object({
  stage: Type.Union([Type.Literal('assume_role'), Type.Literal('put_object'), Type.Literal('complete')], {
    description: 'How far the test got: the stage that failed, or complete',
  }),
  success: Type.Boolean(),
  error: Type.Optional(
    Type.Union([
      Type.Object({ code: Type.Union([Type.Literal('assume_role_failed'), Type.Literal('put_object_failed')]), message: Type.String() }),
      Type.Null(),
    ]),
  ),
});
export type AuditLogExportDestinationTestResult = Static<typeof AuditLogExportDestinationTestResultSchema>;

export const auditExportDestinationRoutes = {
  createAuditLogExportDestination: {
    method: 'POST',
    url: '/audit-logs/export/destinations',
    auth: 'key',
    summary:
      "Deliver the organization's audit log to an S3 bucket, from now on, through a role rbrowse assumes (its trust policy needs kernel_role_arn and external_id)",
    tag: 'audit-logs',
    body: CreateAuditLogExportDestinationSchema,
    success: { status: 201, body: AuditLogExportDestinationSchema },
  },
  listAuditLogExportDestinations: {
    method: 'GET',
    url: '/audit-logs/export/destinations',
    auth: 'key',
    summary: "The organization's audit-log export destinations (X-Has-More / X-Next-Offset headers paginate)",
    tag: 'audit-logs',
    querystring: Type.Object(PaginationQuery),
    success: { status: 200, body: Type.Array(AuditLogExportDestinationSchema) },
  },
  getAuditLogExportDestination: {
    method: 'GET',
    url: '/audit-logs/export/destinations/:id',
    auth: 'key',
    summary: 'An audit-log export destination, with its delivery state',
    tag: 'audit-logs',
    params: IdParamsSchema,
    success: { status: 200, body: AuditLogExportDestinationSchema },
  },
  updateAuditLogExportDestination: {
    method: 'PATCH',
    url: '/audit-logs/export/destinations/:id',
    auth: 'key',
    summary: 'Change a destination, or pause and resume it (events recorded while paused are never exported)',
    tag: 'audit-logs',
    params: IdParamsSchema,
    body: UpdateAuditLogExportDestinationSchema,
    success: { status: 200, body: AuditLogExportDestinationSchema },
  },
  deleteAuditLogExportDestination: {
    method: 'DELETE',
    url: '/audit-logs/export/destinations/:id',
    auth: 'key',
    summary: 'Stop delivering to a destination and forget it',
    tag: 'audit-logs',
    params: IdParamsSchema,
    success: NoContent,
  },
  testAuditLogExportDestination: {
    method: 'POST',
    url: '/audit-logs/export/destinations/:id/test',
    auth: 'key',
    summary: 'Assume the role and write a test object now: how far it got, and why not further',
    tag: 'audit-logs',
    params: IdParamsSchema,
    success: { status: 200, body: AuditLogExportDestinationTestResultSchema },
  },
} as const satisfies Record<string, RouteDef>;
