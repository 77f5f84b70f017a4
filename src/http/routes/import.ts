/**
 * contract.md#d29, decisions.md#importing-members: `POST /auth/admin/members/import[?dryRun=true]`, the tenant
 * admin's import of members with the password hashes of the system they leave. Its own body limit
 * (IMPORT_BODY_LIMIT_BYTES): 1,000 members do not fit the 16 KiB of every other call.
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type, type Static } from "typebox";
import type { Deps } from "../../deps.js";
import { IMPORT_REFUSALS, importMembers, type ImportFormat } from "../../flows/admin/import.js";
import { IMPORT_BODY_LIMIT_BYTES, IMPORT_MAX_MEMBERS, NAME_MAX_LENGTH } from "../../rules.js";
import { ADMIN_ERRORS, BODY_ERRORS, errorResponses, security, TENANT_ERRORS } from "../openapi.js";
import { described, EMAIL_FIELD_MAX_LENGTH, StringEnum } from "../schemas.js";
import { contextOf } from "../tenant.js";
import { requireAdminKey } from "./admin.js";

/**
 * One member as the old system knew it. The schema gives the types; every other rule (the email's form,
 * the hash's format and cost, the TOTP secret) is checked per member, and a member that breaks one is
 * refused with its index while the others are imported.
 */
const ImportedMemberItem = Type.Object(
  {
    email: Type.String({ maxLength: EMAIL_FIELD_MAX_LENGTH + 1, description: "The member's email; checked per member (`invalid_email`)." }),
    name: Type.Optional(Type.String({ maxLength: 400, description: `1 to ${NAME_MAX_LENGTH} characters once trimmed; absent: the email's local part.` })),
    emailVerified: Type.Boolean({ description: "false: a pending account that needs the usual verification link." }),
    passwordHash: Type.Optional(
      Type.String({
        maxLength: 1024,
        description:
          "The old system's hash: Argon2 (PHC), bcrypt (`$2a$`, `$2b$`, `$2y$`), scrypt (PHC), Firebase scrypt (`firebase-scrypt$<salt>$<hash>`), Django `pbkdf2_sha256$…` or ASP.NET Identity v3 (base64). Absent: a member without a password (magic link, passkey, federation).",
      }),
    ),
    createdAt: Type.Optional(
      Type.Union([Type.String({ maxLength: 40 }), Type.Integer({ minimum: 0 })], {
        description: "When the old system created the member: ISO 8601 or Unix milliseconds.",
      }),
    ),
    externalId: Type.Optional(Type.String({ maxLength: 255, description: "The member's id in the old system, kept with the member." })),
    totpSecret: Type.Optional(
      Type.String({ maxLength: 256, description: "Base32 TOTP secret: the member is imported with 2FA on, sealed as Latch keeps its own." }),
    ),
  },
  { additionalProperties: false },
);

export const ImportBody = Type.Object(
  {
    members: Type.Array(ImportedMemberItem, { maxItems: IMPORT_MAX_MEMBERS, description: `At most ${IMPORT_MAX_MEMBERS} members.` }),
    firebaseScrypt: Type.Optional(
      Type.Object(
        {
          signerKey: Type.String({ minLength: 1, maxLength: 512, description: "base64, as the Firebase console shows it." }),
          saltSeparator: Type.String({ maxLength: 64, description: "base64." }),
          rounds: Type.Integer({ minimum: 1, maximum: 32 }),
          memCost: Type.Integer({ minimum: 1, maximum: 20 }),
        },
        { additionalProperties: false, description: "The Firebase project's password hash parameters, needed for `firebase-scrypt$` hashes." },
      ),
    ),
  },
  { additionalProperties: false },
);

export const ImportQuery = Type.Object({
  dryRun: Type.Optional(Type.Boolean({ description: "Check and count everything, write nothing." })),
});

const Count = Type.Integer({ minimum: 0 });
const countsPerFormat = Type.Object(
  { argon2: Count, bcrypt: Count, scrypt: Count, firebaseScrypt: Count, pbkdf2Django: Count, pbkdf2AspNet: Count, none: Count },
  { description: "Members imported (in a dry run: that would be) per hash format; `none`: without a password." },
);
/** The answer's keys are the flow's formats, no more and no fewer. */
const _sameFormats: [keyof Static<typeof countsPerFormat>] extends [ImportFormat]
  ? [ImportFormat] extends [keyof Static<typeof countsPerFormat>]
    ? true
    : never
  : never = true;
void _sameFormats;

export const ImportAnswer = described(
  Type.Object({
    success: Type.Literal(true),
    dryRun: Type.Boolean(),
    imported: Type.Integer({ minimum: 0 }),
    skipped: Type.Integer({ minimum: 0, description: "Members whose email the tenant already has (or an earlier member of the call had): never overwritten." }),
    refused: Type.Array(
      Type.Object({
        index: Type.Integer({ minimum: 0, description: "The member's position in `members`, from 0." }),
        reason: StringEnum(IMPORT_REFUSALS, { description: "Why: docs/import.md lists each." }),
      }),
    ),
    formats: countsPerFormat,
  }),
  "What the import did (or, in a dry run, would do).",
);

export const memberImportRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  requireAdminKey(app, deps);

  app.post(
    "/auth/admin/members/import",
    {
      bodyLimit: IMPORT_BODY_LIMIT_BYTES,
      schema: {
        summary: "Import members with their old password hashes",
        description: `Up to ${IMPORT_MAX_MEMBERS} members a call, each refused alone (with its index and why) or written whole; an email the tenant has is skipped, never overwritten, so a second run imports nothing new. Imported hashes are verified at login with their own algorithm, then replaced with Argon2id. No webhook or email is sent; each imported member gets the audit event \`member_imported\`. The body may be up to ${IMPORT_BODY_LIMIT_BYTES / 1024 / 1024} MiB.`,
        tags: ["admin"],
        operationId: "importMembers",
        security: security.admin,
        querystring: ImportQuery,
        body: ImportBody,
        response: { 200: ImportAnswer, ...errorResponses(...TENANT_ERRORS, ...ADMIN_ERRORS, ...BODY_ERRORS) },
      },
    },
    async (request) => {
      const dryRun = request.query.dryRun === true;
      const report = await importMembers(
        deps,
        request.tenant,
        { members: request.body.members, firebaseScrypt: request.body.firebaseScrypt, dryRun },
        contextOf(request),
      );
      return { success: true as const, dryRun, ...report };
    },
  );
};
