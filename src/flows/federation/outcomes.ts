/**
 * Who a provider's identity is in this tenant (decisions.md#federated-sign-in): a linked `(connection,
 * subject)` signs its member in; an unknown one with an email the provider confirmed makes a member
 * when no one has that email; an email that is a member's is **never** linked on its own word: the
 * member proves the account first (pending.ts). No email the provider did not confirm makes or
 * matches anything.
 */
import { randomToken } from "../../core/random.js";
import type { Deps, TransactionDeps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import { MemberStatus, type Member, type RequestContext, type Tenant } from "../../model.js";
import type { UpstreamIdentity } from "../../providers/upstream.js";
import { sha256Hex } from "../../security/hashing.js";
import { isShowableName, normalizeEmail } from "../../security/identity.js";
import { FEDERATION_PENDING_LIFETIME_MS, NAME_MAX_LENGTH } from "../../rules.js";
import type { Connection } from "../../store/connections.js";
import type { FederationFlow, PendingKind } from "../../store/federation.js";
import type { Store } from "../../store/index.js";
import { eraseMemberRows } from "../kernel/erasure.js";
import { recordSuccessfulLogin } from "../kernel/login-context.js";
import { enqueueMemberEvent } from "../kernel/member-events.js";
import { newRecordId } from "../kernel/record-ids.js";
import { enqueueSecurityAlert } from "../kernel/security-alerts.js";
import { createSession, sessionAmr, type IssuedSession } from "../kernel/sessions.js";

/** Why a callback failed, for the error page; never the provider's own words. */
export type FederationFailure =
  | "no_flow"
  | "provider_error"
  | "provider_unreachable"
  | "invalid_response"
  | "email_not_confirmed"
  | "signup_closed"
  | "domain_not_allowed"
  | "account_locked"
  | "account_pending"
  | "identity_in_use"
  | "try_again";

export type FederatedOutcome =
  | { kind: "signed_in"; recordId: number; session: IssuedSession; returnTo: string | null }
  | { kind: "second_factor"; pendingCookie: string }
  | { kind: "link_required"; pendingCookie: string }
  | { kind: "linked"; returnTo: string | null }
  | { kind: "failed"; reason: FederationFailure; returnTo?: string | null };

const failed = (reason: FederationFailure, returnTo: string | null = null): FederatedOutcome => ({ kind: "failed", reason, returnTo });

/** The provider's email when, and only when, it says it confirmed it, in Latch's form; else null. */
export function confirmedEmailOf(identity: UpstreamIdentity): string | null {
  if (!identity.emailVerified || identity.email === null) return null;
  let email: string;
  try {
    email = normalizeEmail(identity.email);
  } catch {
    return null; // an address outside the one email rule is no address here
  }
  // Lowercasing must change ASCII letters only: the provider confirmed "\u212Aim@…" (a Kelvin sign),
  // a mailbox other than "kim@…", which full Unicode lowercasing would make it.
  const asciiLowered = identity.email.trim().replace(/[A-Z]/g, (c) => c.toLowerCase());
  return asciiLowered === email && email === email.normalize("NFC") ? email : null;
}

export async function decideFederatedIdentity(
  deps: Deps,
  tenant: Tenant,
  connection: Connection,
  flow: FederationFlow,
  identity: UpstreamIdentity,
  context: RequestContext,
): Promise<FederatedOutcome> {
  if (flow.purpose === "link") return linkToSignedInMember(deps, tenant, connection, flow, identity, context);
  const known = await deps.store.federation.findIdentity(tenant.id, connection.id, identity.subject);
  if (known) {
    const member = await deps.store.members.findMemberById(tenant.id, known.memberId);
    if (!member) return failed("try_again", flow.returnTo);
    return signInLinkedMember(deps, tenant, connection, member, identity, flow.returnTo, context);
  }
  const email = confirmedEmailOf(identity);
  if (email === null) return failed("email_not_confirmed", flow.returnTo);
  const holder = await deps.store.members.findMemberByEmail(tenant.id, email);
  // Never linked on the email alone: the member proves the account in this browser first.
  if (holder && holder.status !== MemberStatus.pending) return awaitNextStep(deps, tenant, "link", connection, identity, email, holder.recordId, flow.returnTo);
  if (!connection.allowSignup) return failed(holder ? "account_pending" : "signup_closed", flow.returnTo);
  if (connection.emailDomains !== null && !connection.emailDomains.includes(email.slice(email.lastIndexOf("@") + 1))) {
    return failed("domain_not_allowed", flow.returnTo);
  }
  return signUp(deps, tenant, connection, identity, email, flow.returnTo, context);
}

/** Keeps what the next step needs behind a second one-use cookie, for FEDERATION_PENDING_LIFETIME_MS. */
async function awaitNextStep(
  deps: Deps,
  tenant: Tenant,
  kind: PendingKind,
  connection: Connection,
  identity: UpstreamIdentity,
  email: string | null,
  memberId: number,
  returnTo: string | null,
): Promise<FederatedOutcome> {
  const now = deps.clock.now();
  const pendingCookie = randomToken(deps.random, 32);
  const step = { kind, connectionId: connection.id, subject: identity.subject, email, memberId, returnTo, createdAt: now };
  await deps.store.federation.insertPending(tenant.id, sha256Hex(pendingCookie), step, now + FEDERATION_PENDING_LIFETIME_MS);
  return kind === "link" ? { kind: "link_required", pendingCookie } : { kind: "second_factor", pendingCookie };
}

/** Locked and pending members are refused as a magic link refuses them; 2FA asks for its code first. */
async function signInLinkedMember(
  deps: Deps,
  tenant: Tenant,
  connection: Connection,
  member: Member,
  identity: UpstreamIdentity,
  returnTo: string | null,
  context: RequestContext,
): Promise<FederatedOutcome> {
  if (member.status === MemberStatus.locked) return failed("account_locked", returnTo);
  if (member.status === MemberStatus.pending) return failed("account_pending", returnTo);
  if (member.twoFactorStatus === "Enabled")
    return awaitNextStep(deps, tenant, "second_factor", connection, identity, identity.email, member.recordId, returnTo);
  const now = deps.clock.now();
  const outcome = await deps.store.transaction(async (tx): Promise<FederatedOutcome | "code_required"> => {
    // The row again, locked (contract.md#d20): a lock or 2FA committed since the read above wins.
    const fresh = await tx.members.findMemberById(tenant.id, member.recordId, { lock: true });
    if (!fresh || fresh.status === MemberStatus.locked) return failed("account_locked", returnTo);
    if (fresh.status === MemberStatus.pending) return failed("account_pending", returnTo);
    if (fresh.twoFactorStatus === "Enabled") return "code_required";
    const session = await completeFederatedLogin(tx, deps, tenant, fresh, connection, identity, context, now, { secondFactor: false });
    return { kind: "signed_in", recordId: fresh.recordId, session, returnTo };
  });
  if (outcome === "code_required") return awaitNextStep(deps, tenant, "second_factor", connection, identity, identity.email, member.recordId, returnTo);
  deps.webhooks.notify();
  return outcome;
}

/**
 * The end of every federated login, inside the transaction holding the member's row: the identity's
 * use recorded, `Federated` in authentication_type, the password lockout cleared (the provider proved
 * the person, as a magic link proves the mailbox), the session, and the login's record and audit.
 * `secondFactor`: the member's TOTP or recovery code was checked after the callback (pending.ts).
 */
export async function completeFederatedLogin(
  tx: Store,
  deps: TransactionDeps,
  tenant: Tenant,
  member: Member,
  connection: Pick<Connection, "id">,
  identity: Pick<UpstreamIdentity, "subject" | "email">,
  context: RequestContext,
  now: number,
  how: { secondFactor: boolean },
): Promise<IssuedSession> {
  const linked = await tx.federation.findIdentity(tenant.id, connection.id, identity.subject);
  if (linked) await tx.federation.recordIdentityUse(tenant.id, linked.id, identity.email, now);
  await tx.members.addFederatedAuthentication(tenant.id, member.recordId, now);
  await tx.limits.clearLockout(tenant.id, member.email);
  const session = await createSession(tx, deps, tenant, member.recordId, context, now, { amr: sessionAmr("fed", how.secondFactor) });
  await recordSuccessfulLogin(tx, deps, tenant, member, "federated", context, now);
  const where = { ip: context.ip, userAgent: context.userAgent };
  await tx.audit.insertAuditEvent(tenant.id, { memberId: member.recordId, type: "federated_login", ...where, details: { connection: connection.id } }, now);
  return session;
}

/** The provider's name for the member when it is a name Latch accepts, else the email's local part. */
function signUpName(identity: UpstreamIdentity, email: string): string {
  for (const raw of [identity.name ?? "", email.slice(0, email.lastIndexOf("@"))]) {
    const name = raw.trim().slice(0, NAME_MAX_LENGTH);
    if (name.length > 0 && isShowableName(name, name)) return name;
  }
  return "Member";
}

/**
 * A new member from a confirmed email: Unlocked, verified, without a password. A pending account
 * holding the email is erased first: its registrant never proved the mailbox and it has no
 * password (contract.md#d18), while the provider just confirmed the mailbox is this person's.
 */
async function signUp(
  deps: Deps,
  tenant: Tenant,
  connection: Connection,
  identity: UpstreamIdentity,
  email: string,
  returnTo: string | null,
  context: RequestContext,
): Promise<FederatedOutcome> {
  const now = deps.clock.now();
  const recordId = newRecordId(deps);
  const outcome = await deps.store
    .transaction(async (tx): Promise<FederatedOutcome> => {
      const holder = await tx.members.findMemberByEmail(tenant.id, email, { lock: true });
      if (holder && holder.status !== MemberStatus.pending) return failed("try_again", returnTo); // made meanwhile
      if (holder) await eraseMemberRows(tx, holder);
      const fields = { name: signUpName(identity, email), passwordHash: null, passwordSalt: null, authenticationType: "Federated" as const };
      if (!(await tx.members.insertMember(tenant.id, { recordId, email, ...fields }, now))) return failed("try_again", returnTo);
      await tx.members.activatePendingMember(tenant.id, recordId, fields, now);
      const id = randomToken(deps.random, 16);
      if (
        !(await tx.federation.insertIdentity(tenant.id, {
          id,
          connectionId: connection.id,
          subject: identity.subject,
          memberId: recordId,
          email,
          linkedSeq: null,
          createdAt: now,
        }))
      ) {
        throw new AuthError("conflict"); // the same identity signed up in another request: roll this one back
      }
      const member = await tx.members.findMemberById(tenant.id, recordId, { lock: true });
      await enqueueMemberEvent(tx, deps, tenant, "member.created", recordId, { method: "federated", connection: connection.id }, now);
      const session = await completeFederatedLogin(tx, deps, tenant, member!, connection, identity, context, now, { secondFactor: false });
      return { kind: "signed_in", recordId, session, returnTo };
    })
    .catch((error: unknown) => {
      if (error instanceof AuthError && error.code === "conflict") return failed("try_again", returnTo);
      throw error;
    });
  deps.webhooks.notify();
  return outcome;
}

/**
 * Links an identity to a member whose account is proved (a signed-in session after re-authentication,
 * or a fresh sign-in after the callback), inside the transaction holding the member's row. The alert
 * goes first and the link takes the member's next `security_seq` after it, so "this wasn't me" from
 * this alert or any earlier one removes the link, and a later alert's does not (decisions.md#federated-sign-in).
 * False when the identity is already someone's.
 */
export async function linkIdentity(
  tx: Store,
  deps: TransactionDeps,
  tenant: Tenant,
  member: Member,
  connection: Pick<Connection, "id" | "displayName">,
  identity: { subject: string; email: string | null },
  context: RequestContext,
  now: number,
): Promise<boolean> {
  await enqueueSecurityAlert(tx, deps, tenant, member, "identity_linked", context, now, { fields: { connection: connection.displayName } });
  const linkedSeq = await tx.members.nextSecuritySeq(tenant.id, member.recordId);
  const id = randomToken(deps.random, 16);
  const row = { id, connectionId: connection.id, subject: identity.subject, memberId: member.recordId, email: identity.email, linkedSeq, createdAt: now };
  if (!(await tx.federation.insertIdentity(tenant.id, row))) return false;
  await enqueueMemberEvent(tx, deps, tenant, "member.updated", member.recordId, { changes: ["identities"] }, now);
  const where = { ip: context.ip, userAgent: context.userAgent };
  await tx.audit.insertAuditEvent(tenant.id, { memberId: member.recordId, type: "identity_linked", ...where, details: { connection: connection.id } }, now);
  return true;
}

/** A signed-in member's own link (identities.ts started it after re-authentication). */
async function linkToSignedInMember(
  deps: Deps,
  tenant: Tenant,
  connection: Connection,
  flow: FederationFlow,
  identity: UpstreamIdentity,
  context: RequestContext,
): Promise<FederatedOutcome> {
  const known = await deps.store.federation.findIdentity(tenant.id, connection.id, identity.subject);
  if (known) return known.memberId === flow.memberId ? { kind: "linked", returnTo: flow.returnTo } : failed("identity_in_use", flow.returnTo);
  const now = deps.clock.now();
  const outcome = await deps.store
    .transaction(async (tx): Promise<FederatedOutcome> => {
      const member = await tx.members.findMemberById(tenant.id, flow.memberId, { lock: true });
      if (!member || member.status === MemberStatus.locked) return failed("account_locked", flow.returnTo);
      if (!(await linkIdentity(tx, deps, tenant, member, connection, identity, context, now))) throw new AuthError("conflict");
      return { kind: "linked", returnTo: flow.returnTo };
    })
    .catch((error: unknown) => {
      if (error instanceof AuthError && error.code === "conflict") return failed("identity_in_use", flow.returnTo);
      throw error;
    });
  deps.webhooks.notify();
  return outcome;
}
