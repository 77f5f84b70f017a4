/**
 * Email verification (contract.md#spec-4-1, contract.md#d18): using a link. A link is
 * bound to the registration that issued it, and using it makes the pending account what that
 * registration asked for: its password (or none), name and type. A resend link carries no
 * password: the member may choose one with it (`password`), or verify without.
 */
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import { MemberStatus, type RequestContext, type Tenant } from "../../model.js";
import { parseRecordId } from "../../security/identity.js";
import { sha256Hex } from "../../security/hashing.js";
import type { Activation } from "../../store/members.js";
import { enqueueStatusEvent } from "../kernel/member-events.js";
import { nextStatus } from "../kernel/member-status.js";
import { checkNewPassword, hashNewPassword } from "../kernel/passwords.js";
import { importedRegistrationId } from "../kernel/stored-passwords.js";

export interface VerifyEmailInput {
  recordId: string;
  token: string;
  /** Only with a link that carries no password (a resend, or a passwordless registration). */
  password?: string;
}

export const LINK_HAS_PASSWORD_MESSAGE = "This link keeps the password chosen at registration; send it without a password.";

/** `email`: the address just confirmed, for the hosted login page to fill in (hosted-pages.md#login-email-after-verification); the API does not answer it. */
export async function verifyEmail(
  deps: Deps,
  tenant: Tenant,
  input: VerifyEmailInput,
  context: RequestContext,
): Promise<{ passwordSet: boolean; email: string }> {
  const now = deps.clock.now();
  const recordId = parseRecordId(input.recordId);
  const tokenHash = sha256Hex(input.token);
  // Peeked first: a weak password must not use the link up (contract.md#d15), and no hash is computed for a dead link.
  const link = recordId === undefined ? undefined : await deps.store.tokens.findVerificationToken(tenant.id, recordId, tokenHash, now);
  if (recordId === undefined || !link) throw new AuthError("invalid_token");
  const chosen = input.password === undefined ? undefined : await hashChosenPassword(deps, tenant, recordId, link.registrationId, input.password);
  const { passwordSet, email } = await deps.store.transaction(async (tx) => {
    // The member row first (contract.md#d20), then the link: a link can't rewrite an account that is active.
    const member = await tx.members.findMemberById(tenant.id, recordId, { lock: true });
    if (!member || nextStatus("verifyEmail", member) === undefined) throw new AuthError("invalid_token");
    const used = await tx.tokens.consumeVerificationToken(tenant.id, recordId, tokenHash, now);
    if (!used) throw new AuthError("invalid_token");
    const registration = used.registrationId === null ? undefined : await tx.registrations.findRegistration(tenant.id, recordId, used.registrationId);
    if (used.registrationId !== null && !registration) throw new AuthError("invalid_token");
    // decisions.md#pending-imports: a link that carries no password keeps an imported member's old one, unless they choose another.
    const imported =
      used.registrationId === null && !chosen ? await tx.registrations.findRegistration(tenant.id, recordId, importedRegistrationId(recordId)) : undefined;
    const kept = registration ?? imported;
    const passwordHash = kept?.passwordHash ?? chosen?.passwordHash ?? null;
    const activation: Activation = {
      name: registration?.name ?? member.name,
      passwordHash,
      passwordSalt: kept?.passwordHash ? kept.passwordSalt : (chosen?.passwordSalt ?? null),
      authenticationType: registration?.authenticationType ?? (passwordHash ? "Password" : "Magic Link"),
    };
    if (!(await tx.members.activatePendingMember(tenant.id, recordId, activation, now))) throw new Error("member changed under its row lock");
    // Every other outstanding link and registration of the account is void now (contract.md#d18).
    await tx.tokens.deleteMemberTokens(tenant.id, recordId, "verify_email");
    await tx.registrations.deleteMemberRegistrations(tenant.id, recordId);
    await tx.audit.insertAuditEvent(
      tenant.id,
      { memberId: recordId, type: "email_verified", ip: context.ip, userAgent: context.userAgent, details: { passwordSet: passwordHash !== null } },
      now,
    );
    await enqueueStatusEvent(tx, deps, tenant, recordId, member.status, MemberStatus.unlocked, now);
    return { passwordSet: passwordHash !== null, email: member.email };
  });
  deps.webhooks.notify();
  return { passwordSet, email };
}

/** A password may come only with a link that carries none; it passes the policy and breach checks (contract.md#d11, contract.md#d12). */
async function hashChosenPassword(
  deps: Deps,
  tenant: Tenant,
  recordId: number,
  registrationId: string | null,
  password: string,
): Promise<{ passwordHash: string; passwordSalt: string }> {
  if (registrationId !== null) {
    const registration = await deps.store.registrations.findRegistration(tenant.id, recordId, registrationId);
    if (registration?.passwordHash) throw new AuthError("validation_failed", { message: LINK_HAS_PASSWORD_MESSAGE });
  }
  return hashNewPassword(deps, await checkNewPassword(deps, password));
}

export interface VerificationLinkInfo {
  /** False for a resend or an email-only registration: the page offers "choose a password". */
  setsPassword: boolean;
  /** A resend to an imported member: left empty, "choose a password" keeps the old one (decisions.md#pending-imports). */
  keepsImportedPassword: boolean;
  /** The name the link's registration gave, so its reader can tell a registration they didn't make. */
  registeredName: string | undefined;
}

/** What the hosted page says about a live verification link; undefined for a dead one. Changes nothing. */
export async function describeVerificationLink(deps: Deps, tenant: Tenant, rawRecordId: string, token: string): Promise<VerificationLinkInfo | undefined> {
  const recordId = parseRecordId(rawRecordId);
  if (recordId === undefined) return undefined;
  const link = await deps.store.tokens.findVerificationToken(tenant.id, recordId, sha256Hex(token), deps.clock.now());
  if (!link) return undefined;
  if (link.registrationId === null) {
    const imported = await deps.store.registrations.findRegistration(tenant.id, recordId, importedRegistrationId(recordId));
    return { setsPassword: false, keepsImportedPassword: imported?.passwordHash != null, registeredName: undefined };
  }
  const registration = await deps.store.registrations.findRegistration(tenant.id, recordId, link.registrationId);
  return { setsPassword: registration?.passwordHash != null, keepsImportedPassword: false, registeredName: registration?.name };
}
