/**
 * Passwordless login (contract.md#spec-4-4): requesting a magic link, and
 * verifying it. A link is consumed only when the whole check passes (contract.md#d15), so a member with 2FA
 * can submit the same link again with the code and a fresh bot token.
 */
import type { Deps, TransactionDeps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import type { LoginMethod } from "../../metrics.js";
import { MemberStatus, type Member, type RequestContext, type Tenant } from "../../model.js";
import { normalizeEmail } from "../../security/identity.js";
import { distinctIpRules, rateRules } from "../../rules.js";
import { enforceRateLimit, refuseManyIpsForOneEmail, verifyBotChallenge } from "../kernel/guards.js";
import { enqueueEmailRequest } from "../kernel/email-requests.js";
import { recordSuccessfulLogin } from "../kernel/login-context.js";
import { secondFactorRequired, signedIn, type LoginOutcome } from "../kernel/login-outcome.js";
import { peekLink } from "../kernel/one-time-tokens.js";
import { createSession, sessionAmr, type IssuedSession } from "../kernel/sessions.js";
import type { Store } from "../../store/index.js";
import { checkSecondFactorIn, throwForFailedCheck, type SecondFactorCheck } from "../kernel/second-factor.js";

export const MAGIC_LINK_SENT_MESSAGE = "If an account exists for that email, a login link has been sent.";
export const MAGIC_LOGIN_MESSAGE = "You are now logged in.";
export const MAGIC_TWO_FACTOR_MESSAGE = "Enter the code from your authenticator app to finish logging in.";

export interface RequestMagicLinkInput {
  email: string;
  botToken: string | undefined;
}

/**
 * contract.md#spec-4-4's outcome table: unknown and locked get the generic success with nothing sent; an
 * unverified email gets email_not_verified (the spec demands it); the rest get a link.
 */
export async function requestMagicLink(deps: Deps, tenant: Tenant, input: RequestMagicLinkInput, context: RequestContext): Promise<string> {
  const now = deps.clock.now();
  const email = normalizeEmail(input.email);
  await verifyBotChallenge(deps, tenant, input.botToken, context);
  await enforceRateLimit(deps, tenant, rateRules.magicLinkPerIp, context.ip, now);
  await refuseManyIpsForOneEmail(deps, tenant, distinctIpRules.magicLinkIpsPerEmail, email, context, now);
  await enforceRateLimit(deps, tenant, rateRules.magicLinkCooldown, email, now);
  // The status check is a read and answers now (the spec demands email_not_verified); the rest is
  // one email request whatever the email (contract.md#d19), turned into a link by the worker.
  const member = await deps.store.members.findMemberByEmail(tenant.id, email);
  if (member?.status === MemberStatus.pending) throw new AuthError("email_not_verified");
  await enqueueEmailRequest(deps, tenant, "magic_link", email, context, now);
  return MAGIC_LINK_SENT_MESSAGE;
}

export interface VerifyMagicLinkInput {
  recordId: string;
  token: string;
  botToken: string | undefined;
  twoFACode: string | undefined;
}

/** Counted like password login: by the result, or by the error's code. */
export async function verifyMagicLink(deps: Deps, tenant: Tenant, input: VerifyMagicLinkInput, context: RequestContext): Promise<LoginOutcome> {
  return deps.metrics.countLogin(
    "magic_link",
    () => loginWithMagicLink(deps, tenant, input, context),
    (result) => result.kind === "signed_in",
  );
}

async function loginWithMagicLink(deps: Deps, tenant: Tenant, input: VerifyMagicLinkInput, context: RequestContext): Promise<LoginOutcome> {
  const now = deps.clock.now();
  await verifyBotChallenge(deps, tenant, input.botToken, context);
  // Peeked, not consumed: a missing 2FA code or a wrong one must leave the link usable (contract.md#d15).
  const { recordId, tokenHash } = await peekLink(deps.store, tenant, input, "magic_login", now);
  const member = await deps.store.members.findMemberById(tenant.id, recordId);
  if (!member) throw new AuthError("invalid_token");
  if (member.status === MemberStatus.locked) throw new AuthError("account_locked");
  const twoFACode = input.twoFACode;
  if (member.twoFactorStatus === "Enabled" && !twoFACode) return secondFactorRequired(MAGIC_TWO_FACTOR_MESSAGE);
  const outcome = await deps.store.transaction(async (tx) => {
    // The member row first (contract.md#d20): a lock committed since it was read wins (it voided the link
    // too), and 2FA turned on since then is asked for. Then the link is re-checked and locked.
    const fresh = await tx.members.findMemberById(tenant.id, recordId, { lock: true });
    if (!fresh) return { kind: "invalid" as const };
    return finishMagicLogin(tx, deps, tenant, fresh, tokenHash, twoFACode, "magic_link", context, now);
  });
  return answerMagicLogin(deps, tenant, outcome);
}

export type MagicLoginOutcome =
  | { kind: "invalid" }
  | { kind: "locked" }
  | { kind: "code_required" }
  | { kind: "code_refused"; check: SecondFactorCheck & { ok: false } }
  | { kind: "session"; recordId: number; session: IssuedSession };

/**
 * The end of a login by magic link or by its emailed code (contract.md#d26), inside the transaction that
 * holds the member's row: the status, the link (re-checked and locked), then the second factor
 * (checked here, so of concurrent submissions the losers neither get a session nor spend a code),
 * then the link is used up and the session made.
 */
export async function finishMagicLogin(
  tx: Store,
  deps: TransactionDeps,
  tenant: Tenant,
  member: Member,
  tokenHash: string,
  twoFACode: string | undefined,
  method: LoginMethod,
  context: RequestContext,
  now: number,
): Promise<MagicLoginOutcome> {
  if (member.status === MemberStatus.locked) return { kind: "locked" };
  // No link is sent to a pending account; one made before an admin action is refused all the same.
  if (member.status === MemberStatus.pending) return { kind: "invalid" };
  if (member.twoFactorStatus === "Enabled" && !twoFACode) return { kind: "code_required" };
  if (!(await tx.tokens.isTokenValid(tenant.id, member.recordId, "magic_login", tokenHash, now, { lock: true }))) return { kind: "invalid" };
  if (member.twoFactorStatus === "Enabled") {
    const check = await checkSecondFactorIn(tx, deps, tenant, member, twoFACode!, context, now);
    if (!check.ok) return { kind: "code_refused", check };
  }
  if (!(await tx.tokens.consumeToken(tenant.id, member.recordId, "magic_login", tokenHash, now))) return { kind: "invalid" };
  await tx.members.addMagicLinkAuthentication(tenant.id, member.recordId, now);
  // A magic link proves the mailbox: like any successful login it clears the password lockout (contract.md#d13).
  await tx.limits.clearLockout(tenant.id, member.email);
  const amr = sessionAmr("email", member.twoFactorStatus === "Enabled");
  const session = await createSession(tx, deps, tenant, member.recordId, context, now, { amr });
  await recordSuccessfulLogin(tx, deps, tenant, member, method, context, now);
  return { kind: "session", recordId: member.recordId, session };
}

/** The answer to a finished (or refused) magic login, after the commit. */
export function answerMagicLogin(deps: Deps, tenant: Tenant, outcome: MagicLoginOutcome): LoginOutcome {
  if (outcome.kind === "invalid") throw new AuthError("invalid_token");
  if (outcome.kind === "locked") throw new AuthError("account_locked");
  if (outcome.kind === "code_required") return secondFactorRequired(MAGIC_TWO_FACTOR_MESSAGE);
  if (outcome.kind === "code_refused") throwForFailedCheck(outcome.check);
  deps.webhooks.notify();
  return signedIn(tenant, outcome.recordId, outcome.session);
}
