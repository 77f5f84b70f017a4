/**
 * Password login (contract.md#spec-4-2). Order: bot check, lockout and velocity, password, then account
 * status (contract.md#d4's deliberate deviation: status is revealed only to someone who knows the password),
 * then the second factor, then the session.
 */
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import { MemberStatus, type Member, type RequestContext, type Tenant } from "../../model.js";
import type { AuditEvent } from "../../store/audit.js";
import { normalizeEmail } from "../../security/identity.js";
import { normalizePassword } from "../../security/password.js";
import { distinctIpRules } from "../../rules.js";
import { verifyBotChallenge } from "../kernel/guards.js";
import { holdingPlace, passwordCheckPassed, recordFailedPasswordCheck, reservePasswordAttempt, type PasswordAttempt } from "../kernel/password-attempts.js";
import { hashNewPassword, type HashedPassword } from "../kernel/passwords.js";
import { needsNewHash, verifyStoredPassword } from "../kernel/stored-passwords.js";
import { recordSuccessfulLogin } from "../kernel/login-context.js";
import { secondFactorRequired, signedIn, type LoginOutcome } from "../kernel/login-outcome.js";
import { createSession, sessionAmr } from "../kernel/sessions.js";
import { verifySecondFactor } from "../kernel/second-factor.js";

export const TWO_FACTOR_REQUIRED_MESSAGE = "Enter the code from your authenticator app or a recovery code.";

export interface PasswordLoginInput {
  email: string;
  password: string;
  twoFACode: string | undefined;
  botToken: string | undefined;
}

/** Every attempt that reaches the flow is counted by its outcome: the result, or the error's code. */
export async function loginWithPassword(deps: Deps, tenant: Tenant, input: PasswordLoginInput, context: RequestContext): Promise<LoginOutcome> {
  return deps.metrics.countLogin(
    "password",
    () => attemptPasswordLogin(deps, tenant, input, context),
    (result) => result.kind === "signed_in",
  );
}

async function attemptPasswordLogin(deps: Deps, tenant: Tenant, input: PasswordLoginInput, context: RequestContext): Promise<LoginOutcome> {
  const now = deps.clock.now();
  const email = normalizeEmail(input.email);
  await verifyBotChallenge(deps, tenant, input.botToken, context);
  const attempt = await reservePasswordAttempt(deps, tenant, email, context, { trackVelocity: true });
  // Whatever ends this login without a verdict (an error) gives its place in the budget back.
  return holdingPlace(deps, tenant, attempt, async () => {
    const member = await deps.store.members.findMemberByEmail(tenant.id, email);
    if (attempt.distinctIps >= distinctIpRules.suspiciousLoginIps.threshold) {
      // Written for a known and an unknown email alike (no member id then): a write for known
      // emails only showed in the timing (contract.md#issue-13, finding 6).
      const event: AuditEvent = {
        memberId: member?.recordId ?? null,
        type: "suspicious_login_velocity",
        ip: context.ip,
        userAgent: context.userAgent,
        details: { distinctIps: attempt.distinctIps },
      };
      await deps.store.audit.insertAuditEvent(tenant.id, event, now);
    }
    const password = normalizePassword(input.password);
    const passwordHash = await passwordHashToCheck(deps, tenant, member);
    // An imported hash is verified with its own algorithm (contract.md#d29); an unknown email still costs one Argon2id.
    const matched = passwordHash
      ? await verifyStoredPassword(deps, tenant, passwordHash, input.password)
      : await deps.hasher.verifyAgainstDummy(password).then(() => false);
    if (!member || !matched) {
      await recordFailedPasswordCheck(deps, tenant, attempt);
      // The same write for a known and an unknown email (no member id then), after the answer: a
      // write for known emails only showed in the timing of the next request (contract.md#issue-13, finding 3).
      const event: AuditEvent = {
        memberId: member?.recordId ?? null,
        type: "login_failed",
        ip: context.ip,
        userAgent: context.userAgent,
        details: { reason: "password" },
      };
      deps.background.run("login failure audit", () => deps.store.audit.insertAuditEvent(tenant.id, event, now));
      throw new AuthError("invalid_credentials");
    }
    return completeLogin(deps, tenant, attempt, member, { typed: input.password, normalized: password }, input.twoFACode, context, now);
  });
}

/**
 * The password matched `member` as read before the hash. Status, second factor and session are
 * decided on that row; the session's transaction reads the row again with its lock (contract.md#d20), and if
 * a lock, a required change, another password or 2FA committed meanwhile, the login is decided
 * again on the fresh row. So no session outlives a lock that committed after the password matched.
 */
async function completeLogin(
  deps: Deps,
  tenant: Tenant,
  attempt: PasswordAttempt,
  member: Member,
  password: { typed: string; normalized: string },
  twoFACode: string | undefined,
  context: RequestContext,
  now: number,
): Promise<LoginOutcome> {
  let secondFactorChecked = false;
  // contract.md#d12, contract.md#d29: the new hash of an outdated or imported one, computed at most once for the
  // whole login, before its transaction (no hashing under the write lock, none again when a round is redone).
  let newHash: HashedPassword | undefined;
  for (let round = 0; round < 3; round++) {
    // The right password clears the lockout count (contract.md#d13). On the plain path that happens in the
    // session's transaction, one commit instead of two; every other path clears it here first.
    const straightToSession = member.status === MemberStatus.unlocked && member.twoFactorStatus !== "Enabled" && !needsNewHash(deps, member.passwordHash!);
    if (!straightToSession) await passwordCheckPassed(deps.store, tenant, attempt);

    if (member.status === MemberStatus.locked) throw new AuthError("account_locked");
    if (member.status === MemberStatus.pending) throw new AuthError("email_not_verified");
    if (member.status === MemberStatus.passwordChangePending) throw new AuthError("password_change_required");

    if (member.twoFactorStatus === "Enabled" && !secondFactorChecked) {
      if (!twoFACode) return secondFactorRequired(TWO_FACTOR_REQUIRED_MESSAGE);
      await verifySecondFactor(deps, tenant, member, twoFACode, context, now);
      secondFactorChecked = true;
    }

    // Written in the session's own transaction, only over the hash the login was decided on.
    const rehash = needsNewHash(deps, member.passwordHash!) ? (newHash ??= await hashNewPassword(deps, password.normalized)) : undefined;
    const decidedOn = member;
    const outcome = await deps.store.transaction(async (tx) => {
      const fresh = await tx.members.findMemberById(tenant.id, decidedOn.recordId, { lock: true });
      if (!fresh || !sameLoginState(fresh, decidedOn)) return { fresh };
      if (straightToSession) await tx.limits.clearLockout(tenant.id, fresh.email);
      if (
        rehash &&
        !(await tx.members.replacePasswordHash(tenant.id, fresh.recordId, decidedOn.passwordHash!, rehash.passwordHash, rehash.passwordSalt, now))
      ) {
        throw new Error("the password hash changed under its row lock");
      }
      const issued = await createSession(tx, deps, tenant, fresh.recordId, context, now, { amr: sessionAmr("pwd", secondFactorChecked) });
      await recordSuccessfulLogin(tx, deps, tenant, fresh, "password", context, now);
      return { session: issued };
    });
    if (outcome.session) {
      attempt.settled = true; // the lockout was cleared with the session (plain path) or before
      deps.webhooks.notify();
      return signedIn(tenant, member.recordId, outcome.session);
    }
    // Decided again on the fresh row: its password must be the one given too.
    const fresh = outcome.fresh;
    if (
      !fresh?.passwordHash ||
      (fresh.passwordHash !== member.passwordHash && !(await verifyStoredPassword(deps, tenant, fresh.passwordHash, password.typed)))
    ) {
      throw new AuthError("invalid_credentials");
    }
    member = fresh;
  }
  throw new Error("the member kept changing during login");
}

/** What a login decides on: a change of any of these between the decision and the session redoes it. */
function sameLoginState(fresh: Member, decidedOn: Member): boolean {
  return fresh.status === decidedOn.status && fresh.passwordHash === decidedOn.passwordHash && fresh.twoFactorStatus === decidedOn.twoFactorStatus;
}

/**
 * contract.md#d18: a pending account holds no password of its own; a login to it is checked against its newest
 * registration, so 403 email_not_verified answers only that registration's password. The lookup
 * runs for every email (member id 0 matches nothing), so it costs the same whether the account exists.
 */
async function passwordHashToCheck(deps: Deps, tenant: Tenant, member: Member | undefined): Promise<string | null> {
  const newest = await deps.store.registrations.findNewestRegistration(tenant.id, member?.recordId ?? 0);
  if (member?.status === MemberStatus.pending) return newest?.passwordHash ?? null;
  return member?.passwordHash ?? null;
}
