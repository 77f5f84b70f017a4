/**
 * The second factor's code check (contract.md#d14, contract.md#spec-4-2 step 7), shared by every flow that asks for it:
 * password and magic-link login, re-authentication, and the two-factor slice itself. Each check
 * runs in one transaction with no network, so replay marks, single-use recovery codes and the
 * failure counter stay consistent.
 */
import type { Deps, TransactionDeps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import type { Member, RequestContext, Tenant } from "../../model.js";
import { hashRecoveryCode, normalizeRecoveryCode } from "../../security/recovery-codes.js";
import { isTotpShaped, matchTotpStep } from "../../security/totp.js";
import type { Store } from "../../store/index.js";
import { TWO_FACTOR_FAILURES_BEFORE_LOCKOUT, TWO_FACTOR_LOCKOUT_MS } from "../../rules.js";
import { enqueueSecurityAlert } from "./security-alerts.js";

export type CodeCheck = { ok: true; method: "totp" | "recovery"; step: number } | { ok: false; lockedForMs: number };

/**
 * Checks a TOTP (not replayed) or, when allowed, a recovery code against `secretEnc`, counting
 * failures: the TWO_FACTOR_FAILURES_BEFORE_LOCKOUT-th in a row locks the second factor for
 * TWO_FACTOR_LOCKOUT_MS, and a locked factor checks nothing. A lock tells the member (contract.md#d30,
 * `two_factor_locked`): that many wrong codes mean someone has the password or a session, and a
 * lock that is silent lets them keep the owner out unnoticed.
 */
export async function checkCode(
  tx: Store,
  deps: TransactionDeps,
  tenant: Tenant,
  member: Member,
  secretEnc: string,
  code: string,
  allowRecovery: boolean,
  context: RequestContext,
  now: number,
): Promise<CodeCheck> {
  const memberId = member.recordId;
  const state = await tx.twoFactor.findTwoFactorState(tenant.id, memberId);
  if (!state) return { ok: false, lockedForMs: 0 };
  if (state.lockedUntil > now) return { ok: false, lockedForMs: state.lockedUntil - now };
  // The two formats don't overlap (digits only vs recovery-code letters), so a recovery code is
  // checked without decrypting the TOTP secret: it still works if that secret can't be read.
  const trimmed = code.trim();
  let method: "totp" | "recovery" | undefined;
  let step: number | undefined;
  if (isTotpShaped(trimmed)) {
    step = matchTotpStep(deps.secrets.open(secretEnc), trimmed, now);
    if (step !== undefined && step > state.lastStep) method = "totp";
  } else if (allowRecovery) {
    const normalized = normalizeRecoveryCode(code);
    if (normalized && (await tx.twoFactor.consumeRecoveryCode(tenant.id, memberId, hashRecoveryCode(tenant.id, memberId, normalized)))) method = "recovery";
  }
  if (method) {
    const lastStep = method === "totp" ? step! : state.lastStep;
    await tx.twoFactor.saveAttempt(tenant.id, memberId, { failures: 0, lockedUntil: 0, lastStep }, now);
    return { ok: true, method, step: lastStep };
  }
  const failures = state.failures + 1;
  const locked = failures >= TWO_FACTOR_FAILURES_BEFORE_LOCKOUT;
  await tx.twoFactor.saveAttempt(
    tenant.id,
    memberId,
    { failures: locked ? 0 : failures, lockedUntil: locked ? now + TWO_FACTOR_LOCKOUT_MS : 0, lastStep: state.lastStep },
    now,
  );
  if (locked) {
    // Counted before the commit: the transactions around a code check always commit its count.
    deps.metrics.lockoutStarted("two_factor");
    await enqueueSecurityAlert(tx, deps, tenant, member, "two_factor_locked", context, now);
  }
  return { ok: false, lockedForMs: 0 };
}

export function throwForFailedCheck(check: CodeCheck & { ok: false }): never {
  if (check.lockedForMs > 0) {
    throw new AuthError("rate_limited", {
      message: "Too many incorrect codes. Please try again later.",
      retryAfterSeconds: Math.ceil(check.lockedForMs / 1000),
      logFields: { lockout: "two_factor" },
    });
  }
  throw new AuthError("invalid_2fa_code");
}

export type SecondFactorCheck = CodeCheck;

/**
 * Checks a TOTP or recovery code inside the caller's transaction, with its audit event and the
 * recovery-code alert; never throws for a wrong code, so the caller can commit the failure count.
 */
export async function checkSecondFactorIn(
  tx: Store,
  deps: TransactionDeps,
  tenant: Tenant,
  member: Member,
  code: string,
  context: RequestContext,
  now: number,
): Promise<SecondFactorCheck> {
  const state = await tx.twoFactor.findTwoFactorState(tenant.id, member.recordId);
  if (!state?.secretEnc) return { ok: false, lockedForMs: 0 };
  const result = await checkCode(tx, deps, tenant, member, state.secretEnc, code, true, context, now);
  const type = result.ok ? (result.method === "recovery" ? "recovery_code_used" : "two_factor_passed") : "two_factor_failed";
  await tx.audit.insertAuditEvent(tenant.id, { memberId: member.recordId, type, ip: context.ip, userAgent: context.userAgent }, now);
  if (result.ok && result.method === "recovery") await enqueueSecurityAlert(tx, deps, tenant, member, "recovery_code_used", context, now);
  return result;
}

/** Login's step 7: a TOTP code or a recovery code for an enrolled member. */
export async function verifySecondFactor(deps: Deps, tenant: Tenant, member: Member, code: string, context: RequestContext, now: number): Promise<void> {
  const check = await deps.store.transaction((tx) => checkSecondFactorIn(tx, deps, tenant, member, code, context, now));
  deps.webhooks.notify();
  if (!check.ok) throwForFailedCheck(check);
}
