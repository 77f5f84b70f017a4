/**
 * contract.md#d29, decisions.md#importing-members: members moved in from another system with their password
 * hashes. Every member is checked before anything is written (so a refusal never leaves half a
 * member); the checked members of one call are written in one transaction, each as one row (plus
 * its registration when pending, and one audit row). An email already in the tenant, or met earlier
 * in the same call, is skipped and never overwritten, so running a file twice imports nothing new.
 * A dry run does the checks and the lookups, and writes nothing.
 */
import { createHmac } from "node:crypto";
import { Secret } from "otpauth";
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import type { RequestContext, Tenant } from "../../model.js";
import { checkFirebaseParams, FOREIGN_FORMATS, parseForeignHash, type FirebaseScryptParams, type ForeignFormat } from "../../security/foreign-hashes.js";
import { isShowableName, normalizeEmail } from "../../security/identity.js";
import { IMPORT_MAX_MEMBERS, NAME_MAX_LENGTH } from "../../rules.js";
import type { ImportedMember } from "../../store/imports.js";
import { newRecordId } from "../kernel/record-ids.js";
import { importedRegistrationId } from "../kernel/stored-passwords.js";

/** Why one member is refused: stable words (docs/import.md lists them). */
export type ImportRefusal =
  | "not_an_object"
  | "invalid_email"
  | "invalid_name"
  | "invalid_email_verified"
  | "invalid_password_hash"
  | "invalid_created_at"
  | "invalid_external_id"
  | "invalid_totp_secret"
  | "unknown_hash_format"
  | "malformed_hash"
  | "hash_cost_too_high"
  | "firebase_params_missing";

export const IMPORT_REFUSALS: readonly ImportRefusal[] = [
  "not_an_object",
  "invalid_email",
  "invalid_name",
  "invalid_email_verified",
  "invalid_password_hash",
  "invalid_created_at",
  "invalid_external_id",
  "invalid_totp_secret",
  "unknown_hash_format",
  "malformed_hash",
  "hash_cost_too_high",
  "firebase_params_missing",
];

export type ImportFormat = ForeignFormat | "none";
export const IMPORT_FORMATS: readonly ImportFormat[] = [...FOREIGN_FORMATS, "none"];

export interface ImportInput {
  /** As received: each is checked here, so the CLI's lines and the API's items get the same rules. */
  members: readonly unknown[];
  firebaseScrypt?: FirebaseScryptParams;
  dryRun: boolean;
}

/** contract.md#d29's answer. `formats` counts the members imported (or, in a dry run, that would be) by hash format. */
export interface ImportReport {
  imported: number;
  skipped: number;
  refused: { index: number; reason: ImportRefusal }[];
  formats: Record<ImportFormat, number>;
}

interface CheckedMember {
  index: number;
  format: ImportFormat;
  member: Omit<ImportedMember, "recordId">;
}

const EXTERNAL_ID_MAX_LENGTH = 255;
const TOTP_MIN_BYTES = 10; // 80 bits, RFC 4226's floor
/** decisions.md#pending-imports: the imported password's registration never expires on its own (the sweep keeps it); it goes with its account. */
const IMPORTED_REGISTRATION_EXPIRES_AT = Number.MAX_SAFE_INTEGER;
/** Firebase parameters are keyed by a fingerprint under a secret derived for this one purpose. */
const PARAMS_ID_PURPOSE = "imported-hash-params";

export function emptyImportReport(): ImportReport {
  return { imported: 0, skipped: 0, refused: [], formats: Object.fromEntries(IMPORT_FORMATS.map((f) => [f, 0])) as Record<ImportFormat, number> };
}

export async function importMembers(deps: Deps, tenant: Tenant, input: ImportInput, context: RequestContext): Promise<ImportReport> {
  if (input.members.length > IMPORT_MAX_MEMBERS) {
    throw new AuthError("validation_failed", {
      message: `At most ${IMPORT_MAX_MEMBERS} members a call.`,
      details: [{ field: "members", rule: "maxItems", message: `at most ${IMPORT_MAX_MEMBERS} members` }],
    });
  }
  const firebase = input.firebaseScrypt;
  if (firebase && checkFirebaseParams(firebase) !== "ok") {
    const tooCostly = checkFirebaseParams(firebase) === "too_costly";
    throw new AuthError("validation_failed", {
      message: tooCostly ? "The Firebase scrypt parameters cost more than Latch verifies at login." : "The Firebase scrypt parameters are not valid.",
      details: [
        {
          field: "firebaseScrypt",
          rule: tooCostly ? "hash_cost" : "firebase_scrypt",
          message: "base64 signerKey and saltSeparator, rounds and memCost within the limits",
        },
      ],
    });
  }
  const now = deps.clock.now();
  const paramsId = firebase ? firebaseParamsId(deps, firebase) : undefined;
  const report = emptyImportReport();
  const checked: CheckedMember[] = [];
  input.members.forEach((raw, index) => {
    const result = checkMember(deps, raw, firebase, paramsId, now);
    if (typeof result === "string") report.refused.push({ index, reason: result });
    else checked.push({ index, ...result });
  });

  const count = (format: ImportFormat, imported: boolean): void => {
    if (!imported) {
      report.skipped += 1;
      return;
    }
    report.imported += 1;
    report.formats[format] += 1;
  };

  if (input.dryRun) {
    const taken = await deps.store.imports.takenEmails(
      tenant.id,
      checked.map((c) => c.member.email),
    );
    for (const { member, format } of checked) {
      count(format, !taken.has(member.email));
      taken.add(member.email);
    }
    return report;
  }

  const outcomes = await deps.store.transaction(async (tx) => {
    if (firebase && paramsId && checked.some((c) => c.format === "firebaseScrypt")) {
      await tx.imports.saveHashParams(tenant.id, paramsId, deps.secrets.seal(JSON.stringify(firebase)), now);
    }
    const imported: boolean[] = [];
    for (const { member, format } of checked) {
      const recordId = await insertWithFreeRecordId(deps, tx, tenant, member, now);
      imported.push(recordId !== undefined);
      if (recordId === undefined) continue;
      if (!member.emailVerified && member.passwordHash !== null) {
        // contract.md#d18: a pending account's password lives in its registration, so a login with it hears
        // email_not_verified. decisions.md#pending-imports: this one is found by the member's resend link
        // and lives as long as the account, so the member verifies and then signs in with the old password.
        await tx.registrations.insertRegistration(
          tenant.id,
          {
            id: importedRegistrationId(recordId),
            memberId: recordId,
            name: member.name,
            authenticationType: "Password",
            passwordHash: member.passwordHash,
            passwordSalt: null,
            expiresAt: IMPORTED_REGISTRATION_EXPIRES_AT,
          },
          now,
        );
      }
      await tx.audit.insertAuditEvent(
        tenant.id,
        { memberId: recordId, type: "member_imported", ip: context.ip === "" ? null : context.ip, userAgent: context.userAgent, details: { format } },
        now,
      );
    }
    return imported;
  });
  checked.forEach((c, i) => count(c.format, outcomes[i]!));
  return report;
}

/** The member's new record id, or undefined when its email is taken (skipped). A random id taken by another email is drawn again. */
async function insertWithFreeRecordId(
  deps: Deps,
  tx: Deps["store"],
  tenant: Tenant,
  member: Omit<ImportedMember, "recordId">,
  now: number,
): Promise<number | undefined> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const recordId = newRecordId(deps);
    if (await tx.imports.insertMember(tenant.id, { ...member, recordId }, now)) return recordId;
    if (await tx.imports.emailTaken(tenant.id, member.email)) return undefined;
  }
  throw new Error("could not allocate a record id");
}

function firebaseParamsId(deps: Deps, params: FirebaseScryptParams): string {
  const canonical = JSON.stringify([params.signerKey, params.saltSeparator, params.rounds, params.memCost]);
  return createHmac("sha256", deps.secrets.deriveSecret(PARAMS_ID_PURPOSE)).update(canonical).digest("base64url").slice(0, 22);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Every rule of one member, nothing written: the member as it will be stored, or why it is refused. */
function checkMember(
  deps: Deps,
  raw: unknown,
  firebase: FirebaseScryptParams | undefined,
  paramsId: string | undefined,
  now: number,
): Omit<CheckedMember, "index"> | ImportRefusal {
  if (!isRecord(raw)) return "not_an_object";
  let email: string;
  try {
    if (typeof raw.email !== "string") return "invalid_email";
    email = normalizeEmail(raw.email);
  } catch {
    return "invalid_email";
  }
  const name = checkName(raw.name, email);
  if (name === undefined) return "invalid_name";
  if (typeof raw.emailVerified !== "boolean") return "invalid_email_verified";
  const createdAt = checkCreatedAt(raw.createdAt, now);
  if (createdAt === undefined) return "invalid_created_at";
  let externalId: string | null = null;
  if (raw.externalId !== undefined && raw.externalId !== null) {
    if (typeof raw.externalId !== "string" || raw.externalId.length < 1 || raw.externalId.length > EXTERNAL_ID_MAX_LENGTH || /\p{Cc}/u.test(raw.externalId)) {
      return "invalid_external_id";
    }
    externalId = raw.externalId;
  }
  let totpSecretSealed: string | null = null;
  if (raw.totpSecret !== undefined && raw.totpSecret !== null) {
    const secret = checkTotpSecret(raw.totpSecret);
    if (secret === undefined) return "invalid_totp_secret";
    totpSecretSealed = deps.secrets.seal(secret);
  }
  let format: ImportFormat = "none";
  let passwordHash: string | null = null;
  if (raw.passwordHash !== undefined && raw.passwordHash !== null) {
    if (typeof raw.passwordHash !== "string" || raw.passwordHash.length === 0 || raw.passwordHash.length > 1024) return "invalid_password_hash";
    const parsed = parseForeignHash(raw.passwordHash, firebase);
    if (!parsed.ok) return parsed.reason;
    format = parsed.format;
    passwordHash = parsed.stored(paramsId);
  }
  return {
    format,
    member: { email, name, emailVerified: raw.emailVerified, passwordHash, createdAt, externalId, totpSecretSealed },
  };
}

/** contract.md#d8 and contract.md#d30's name rules; without one, the email's local part (as a federated sign-up gets). */
function checkName(raw: unknown, email: string): string | undefined {
  if (raw === undefined || raw === null || raw === "") {
    const local = email.slice(0, email.lastIndexOf("@"));
    return [...local].slice(0, NAME_MAX_LENGTH).join("");
  }
  if (typeof raw !== "string") return undefined;
  const name = raw.trim();
  const length = [...name].length;
  return isShowableName(name, raw) && length >= 1 && length <= NAME_MAX_LENGTH ? name : undefined;
}

/** An ISO 8601 date-time or Unix milliseconds, not in the future; absent: now. */
function checkCreatedAt(raw: unknown, now: number): number | undefined {
  if (raw === undefined || raw === null) return now;
  let at: number;
  if (typeof raw === "number") at = raw;
  else if (typeof raw === "string" && /^\d{4}-\d{2}-\d{2}T/.test(raw)) at = Date.parse(raw);
  else if (typeof raw === "string" && /^\d{1,16}$/.test(raw))
    at = Number(raw); // Firebase exports milliseconds as text
  else return undefined;
  return Number.isSafeInteger(at) && at >= 0 && at <= now ? at : undefined;
}

/** Base32 (RFC 4648; spaces and case forgiven, as authenticator exports vary), at least 80 bits; stored in Latch's own form. */
function checkTotpSecret(raw: unknown): string | undefined {
  if (typeof raw !== "string") return undefined;
  const compact = raw.replace(/[\s-]/g, "").toUpperCase().replace(/=+$/, "");
  if (!/^[A-Z2-7]{16,128}$/.test(compact)) return undefined;
  const secret = Secret.fromBase32(compact);
  return secret.bytes.length >= TOTP_MIN_BYTES ? secret.base32 : undefined;
}
