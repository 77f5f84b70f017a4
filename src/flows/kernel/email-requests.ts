/**
 * contract.md#d19: every public request that may send an email (registration, resend of the verification
 * email, forgot-password, magic link) is one `email_requests` row, committed before the answer, the
 * same row whatever the email. So a kill -9 after the 200 loses nothing, and the answer does the
 * same work for a known and an unknown email.
 *
 * The worker (run by the webhook dispatcher's pass, woken right after the commit) turns each row
 * into a token and a webhook in one transaction, and does the same storage work for an unknown or
 * ineligible email: the token is written already expired under member id 0 (no member has it, contract.md#d8
 * ids are >= 10^14) and the delivery is written `discarded`. So the timing of the next request
 * can't tell either (contract.md#issue-13, finding 3).
 */
import { randomToken } from "../../core/random.js";
import type { WebhookEventType, WebhookPayload } from "../../core/webhook-payloads.js";
import type { Deps, TransactionDeps } from "../../deps.js";
import { enqueueWebhook, memberFields } from "../../events/outbox.js";
import { MemberStatus, type Member, type RequestContext, type Tenant, type AuditEventType } from "../../model.js";
import type { EmailRequest, EmailRequestKind, NewEmailRequest } from "../../store/email-requests.js";
import type { Store } from "../../store/index.js";
import { issueOneTimeToken, newLoginCode, tokenLifetimeMs } from "./one-time-tokens.js";
import { newRecordId } from "./record-ids.js";

/** Written for an unknown email; no member has it (contract.md#d8 record ids are >= 10^14). */
const NO_MEMBER = 0;
const BATCH = 50;

/** Commits the request before the caller answers (contract.md#d19), then wakes the worker. */
export async function enqueueEmailRequest(
  deps: Deps,
  tenant: Tenant,
  kind: EmailRequestKind,
  email: string,
  context: RequestContext,
  now: number,
  registration?: NewEmailRequest["registration"],
): Promise<void> {
  const request: NewEmailRequest = {
    id: randomToken(deps.random, 16),
    tenantId: tenant.id,
    kind,
    email,
    ip: context.ip,
    userAgent: context.userAgent,
    registration,
  };
  await deps.store.emailRequests.insertEmailRequest(request, now);
  deps.webhooks.notify();
}

/** Handles the waiting requests, oldest first, each in its own transaction; returns how many it handled. */
export async function processEmailRequests(deps: Deps): Promise<number> {
  let handled = 0;
  for (;;) {
    const ids = await deps.store.emailRequests.listWaitingIds(BATCH);
    // Each worker (instance) starts at its own place in the batch, so two don't queue on one row's lock.
    const start = ids.length > 0 ? deps.random.bytes(2).readUInt16BE(0) % ids.length : 0;
    for (const id of [...ids.slice(start), ...ids.slice(0, start)]) {
      const now = deps.clock.now();
      if (await deps.store.transaction((tx) => handleEmailRequest(tx, deps, id, now))) handled++;
    }
    if (ids.length < BATCH) return handled;
  }
}

/** Claims the row (another instance may have it already) and does its kind's work. */
async function handleEmailRequest(tx: Store, deps: TransactionDeps, id: string, now: number): Promise<boolean> {
  const request = await tx.emailRequests.claimEmailRequest(id);
  if (!request) return false;
  const tenant = await tx.tenants.findTenantById(request.tenantId);
  if (!tenant) return true;
  if (request.kind === "registration") await handleRegistration(tx, deps, tenant, request, now);
  else await handleLinkRequest(tx, deps, tenant, request, now);
  return true;
}

interface LinkRule {
  tokenKind: "verify_email" | "password_reset" | "magic_login";
  url: (tenant: Tenant) => string;
  /** The webhook: its event type, and its body with the link in the field that event documents. */
  webhook: (recipient: Recipient, link: string, code: string | undefined) => LinkWebhook;
  audit: AuditEventType;
  /** Who gets a link; everyone else gets the same writes, expired and discarded. */
  eligible: (member: Member) => boolean;
  /** contract.md#spec-4-3: a valid forgot-password request ends every session of the member. */
  endsSessions: boolean;
}

type Recipient = ReturnType<typeof memberFields>;
type LinkWebhook = { [T in WebhookEventType]: { eventType: T; payload: WebhookPayload<T> } }["verify_email" | "password_reset" | "magic_login"];

const linkRules: Record<Exclude<EmailRequestKind, "registration">, LinkRule> = {
  verification_resend: {
    tokenKind: "verify_email",
    url: (t) => t.settings.emailVerificationWebhook,
    webhook: (recipient, link) => ({ eventType: "verify_email", payload: { ...recipient, verificationLink: link } }),
    audit: "verification_resent",
    eligible: (m) => m.status === MemberStatus.pending,
    endsSessions: false,
  },
  password_reset: {
    tokenKind: "password_reset",
    url: (t) => t.settings.passwordResetWebhook,
    webhook: (recipient, link) => ({ eventType: "password_reset", payload: { ...recipient, resetLink: link } }),
    audit: "password_reset_requested",
    eligible: (m) => m.status !== MemberStatus.locked,
    endsSessions: true,
  },
  magic_link: {
    tokenKind: "magic_login",
    url: (t) => t.settings.magicLoginWebhook,
    // The code is drawn for every magic_login token (handleLinkRequest).
    webhook: (recipient, link, code) => ({ eventType: "magic_login", payload: { ...recipient, magicLoginLink: link, code: code! } }),
    audit: "magic_link_requested",
    eligible: (m) => m.status !== MemberStatus.locked && m.status !== MemberStatus.pending,
    endsSessions: false,
  },
};

/** Resend, reset and magic link: one token (voiding the earlier one, contract.md#d7) and one webhook. */
async function handleLinkRequest(tx: Store, deps: TransactionDeps, tenant: Tenant, request: EmailRequest, now: number): Promise<void> {
  const rule = linkRules[request.kind as keyof typeof linkRules];
  const member = await tx.members.findMemberByEmail(tenant.id, request.email, { lock: true });
  const target = member && rule.eligible(member) ? member : undefined;
  const recordId = target?.recordId ?? NO_MEMBER;
  // contract.md#d26: a magic link's email carries a 6-digit code too, on the same row (drawn for a dummy as well: the same work).
  const code = rule.tokenKind === "magic_login" ? newLoginCode(deps.random) : undefined;
  const link = await issueOneTimeToken(tx, deps, tenant, recordId, rule.tokenKind, now, { dummy: !target, code });
  const { eventType, payload } = rule.webhook(memberFields(target ?? { recordId, email: request.email, name: "" }), link, code);
  await enqueueWebhook(tx, deps, tenant, eventType, rule.url(tenant), payload, now, { discarded: !target });
  if (rule.endsSessions) await tx.sessions.deleteMemberSessions(tenant.id, recordId);
  const details = { sent: target !== undefined };
  await tx.audit.insertAuditEvent(
    tenant.id,
    { memberId: member?.recordId ?? null, type: rule.audit, ip: request.ip, userAgent: request.userAgent, details },
    request.createdAt,
  );
}

/**
 * contract.md#d18: a new email becomes a pending member; a pending one gets a registration of its own beside
 * the others, each with its own link; a verified one stores nothing and its owner is told
 * (`account_exists`). The three do the same statements: the member insert that may conflict, one
 * registration row, one token, one delivery, one audit row.
 */
async function handleRegistration(tx: Store, deps: TransactionDeps, tenant: Tenant, request: EmailRequest, now: number): Promise<void> {
  const asked = request.registration!;
  const { member, created } = await findOrCreatePendingMember(tx, deps, tenant, request, now);
  const pending = member.status === MemberStatus.pending;
  const memberId = pending ? member.recordId : NO_MEMBER;
  const registrationId = randomToken(deps.random, 16);
  const lifetime = pending ? tokenLifetimeMs(tenant, "verify_email") : 0;
  await tx.registrations.insertRegistration(
    tenant.id,
    {
      id: registrationId,
      memberId,
      name: asked.name,
      authenticationType: asked.authenticationType,
      passwordHash: asked.passwordHash,
      passwordSalt: asked.passwordSalt,
      expiresAt: now + lifetime,
    },
    now,
  );
  const verificationLink = await issueOneTimeToken(tx, deps, tenant, memberId, "verify_email", now, { registrationId, dummy: !pending });
  const url = tenant.settings.emailVerificationWebhook;
  if (pending) await enqueueWebhook(tx, deps, tenant, "verify_email", url, { ...memberFields({ ...member, name: asked.name }), verificationLink }, now);
  else await enqueueWebhook(tx, deps, tenant, "account_exists", url, memberFields(member), now);
  const type = created ? "registered" : "registration_repeated";
  const details = { authenticationType: asked.authenticationType };
  await tx.audit.insertAuditEvent(tenant.id, { memberId: member.recordId, type, ip: request.ip, userAgent: request.userAgent, details }, request.createdAt);
}

/** Inserts the pending member under the record id the request answered, unless the email is taken. */
async function findOrCreatePendingMember(
  tx: Store,
  deps: TransactionDeps,
  tenant: Tenant,
  request: EmailRequest,
  now: number,
): Promise<{ member: Member; created: boolean }> {
  const asked = request.registration!;
  let recordId = asked.recordId;
  for (let attempt = 0; attempt < 3; attempt++) {
    const fields = { recordId, email: request.email, name: asked.name, passwordHash: null, passwordSalt: null, authenticationType: asked.authenticationType };
    const created = await tx.members.insertMember(tenant.id, fields, now);
    const member = await tx.members.findMemberByEmail(tenant.id, request.email, { lock: true });
    if (member) return { member, created };
    // The random id belongs to another email (about 1 in 10^10 with a million members): the answer
    // carried an id that is now a decoy, and the link, which carries the real one, still works.
    deps.log.warn({ tenant: tenant.domain }, "record id collision on registration; drawing another");
    recordId = newRecordId(deps);
  }
  throw new Error("could not allocate a record id");
}
