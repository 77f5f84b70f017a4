/**
 * The second factor's own slice (contract.md#d14, contract.md#d30): enrolment (setup, then enable with a first code, the
 * re-authentication at either step), disabling, and new recovery codes. The code check itself is
 * the kernel's (kernel/second-factor.ts), since every way in uses it.
 */
import QRCode from "qrcode";
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import type { Member, RequestContext, Tenant } from "../../model.js";
import { generateRecoveryCodes, hashRecoveryCode, normalizeRecoveryCode } from "../../security/recovery-codes.js";
import { generateTotpSecret, totpUri } from "../../security/totp.js";
import { checkCurrentPassword } from "../kernel/password-attempts.js";
import { INCORRECT_PASSWORD, isFreshSession, lockSessionMember, reauthenticateFirstFactor } from "../kernel/reauthentication.js";
import { enqueueSecurityAlert } from "../kernel/security-alerts.js";
import { findSessionMember, type ActiveSession } from "../kernel/sessions.js";
import { checkCode, throwForFailedCheck, verifySecondFactor } from "../kernel/second-factor.js";

export interface TwoFactorSetup {
  secret: string;
  otpauthUrl: string;
  qrCodeDataUrl: string;
}

export interface TwoFactorSetupInput {
  /** contract.md#d30: re-authenticates here rather than at enable (a member without a password: a young session does). */
  password?: string;
}

function alreadyEnabled(): AuthError {
  return new AuthError("invalid_state", { message: "Two-factor authentication is already enabled." });
}

/**
 * Starts enrolment: a pending secret, replaced by each new setup until one is confirmed. contract.md#d30:
 * turning 2FA on re-authenticates, here or at enable. With `password` (or, for a member without
 * one, a session at most FRESH_SESSION_MS old) it happens here and the pending secret remembers this
 * session, which alone may then enable it without re-authenticating again. `requireReauthentication`
 * (the hosted page, which asks at this step) refuses a setup that doesn't re-authenticate.
 */
export async function setUpTwoFactor(
  deps: Deps,
  tenant: Tenant,
  session: ActiveSession,
  input: TwoFactorSetupInput,
  context: RequestContext,
  options: { requireReauthentication?: boolean } = {},
): Promise<TwoFactorSetup> {
  const now = deps.clock.now();
  const member = await findSessionMember(deps, tenant, session);
  if (member.twoFactorStatus === "Enabled") throw alreadyEnabled();
  const reauthenticated = options.requireReauthentication || input.password !== undefined || (member.passwordHash === null && isFreshSession(session, now));
  if (reauthenticated) await reauthenticateFirstFactor(deps, tenant, session, member, input.password, context);
  const secret = generateTotpSecret(deps.random);
  const setup = await setupOf(secret, tenant, member);
  await deps.store.transaction(async (tx) => {
    // contract.md#d20: decided again on the locked row (the session still live, the password proved still the member's).
    const fresh = await lockSessionMember(tx, tenant, session, now);
    if (reauthenticated && fresh.passwordHash !== member.passwordHash) throw new AuthError("invalid_credentials", { message: INCORRECT_PASSWORD });
    const pending = { secretEnc: deps.secrets.seal(secret), sessionHash: session.idHash, reauthenticated };
    if (!(await tx.twoFactor.savePendingSecret(tenant.id, member.recordId, pending, now))) {
      throw alreadyEnabled();
    }
    await tx.audit.insertAuditEvent(
      tenant.id,
      { memberId: member.recordId, type: "two_factor_setup_started", ip: context.ip, userAgent: context.userAgent, details: { reauthenticated } },
      now,
    );
  });
  return setup;
}

async function setupOf(secret: string, tenant: Tenant, member: Pick<Member, "email">): Promise<TwoFactorSetup> {
  const otpauthUrl = totpUri(secret, tenant.domain, member.email);
  const qrCodeDataUrl = await QRCode.toDataURL(otpauthUrl, { errorCorrectionLevel: "M", margin: 2, width: 240 });
  return { secret, otpauthUrl, qrCodeDataUrl };
}

/**
 * The enrolment in progress, from the stored pending secret: shown again (QR code included) after
 * a wrong first code, so a retry needs no new secret. Undefined when none is pending for this
 * session: an enrolment belongs to the session that started it, and no other may read its secret
 * (contract.md#d30: a stolen session must not copy the owner's authenticator).
 */
export async function pendingTwoFactorSetup(deps: Deps, tenant: Tenant, session: ActiveSession): Promise<TwoFactorSetup | undefined> {
  const member = await findSessionMember(deps, tenant, session);
  if (member.twoFactorStatus === "Enabled") return undefined;
  const state = await deps.store.twoFactor.findTwoFactorState(tenant.id, member.recordId);
  if (!state?.pendingSecretEnc || state.pendingSessionHash !== session.idHash) return undefined;
  return setupOf(deps.secrets.open(state.pendingSecretEnc), tenant, member);
}

export interface EnableTwoFactorInput {
  code: string;
  /** contract.md#d30: the re-authentication, unless this session gave it at setup. */
  password?: string;
}

function startSetupFirst(): AuthError {
  return new AuthError("invalid_state", { message: "Start two-factor setup first." });
}

/**
 * Confirms enrolment with a first valid code from the pending secret; returns the recovery codes,
 * shown this once. contract.md#d30: only the session that started the enrolment may finish it, and it
 * re-authenticates here unless it did at setup.
 */
export async function enableTwoFactor(
  deps: Deps,
  tenant: Tenant,
  session: ActiveSession,
  input: EnableTwoFactorInput,
  context: RequestContext,
): Promise<string[]> {
  const now = deps.clock.now();
  const member = await findSessionMember(deps, tenant, session);
  const pending = await deps.store.twoFactor.findTwoFactorState(tenant.id, member.recordId);
  // Another session's enrolment is none of this one's (it can neither see nor finish it).
  if (member.twoFactorStatus === "Enabled" || !pending?.pendingSecretEnc || pending.pendingSessionHash !== session.idHash) throw startSetupFirst();
  const atSetup = pending.pendingReauthenticated;
  if (!atSetup) await reauthenticateFirstFactor(deps, tenant, session, member, input.password, context);
  const recoveryCodes = generateRecoveryCodes(deps.random);
  const outcome = await deps.store.transaction(async (tx) => {
    const fresh = await lockSessionMember(tx, tenant, session, now);
    const state = await tx.twoFactor.findTwoFactorState(tenant.id, fresh.recordId);
    if (!state?.pendingSecretEnc || fresh.twoFactorStatus === "Enabled") throw startSetupFirst();
    // contract.md#d20: decided again on the locked row: the enrolment is still the one read (another setup
    // replaced it: start again), and the password the re-authentication proved is still the member's.
    if (state.pendingSecretEnc !== pending.pendingSecretEnc || state.pendingSessionHash !== session.idHash) throw startSetupFirst();
    if (!atSetup && fresh.passwordHash !== member.passwordHash) throw new AuthError("invalid_credentials", { message: INCORRECT_PASSWORD });
    const check = await checkCode(tx, deps, tenant, fresh, state.pendingSecretEnc, input.code, false, context, now);
    if (!check.ok) return check;
    // The alert's link first, then the enrolment's place in the member's order (contract.md#d30): so that
    // this alert's own "this wasn't me" turns off the factor it announces, and older links do too.
    await enqueueSecurityAlert(tx, deps, tenant, fresh, "two_factor_enabled", context, now);
    const seq = await tx.members.nextSecuritySeq(tenant.id, fresh.recordId);
    const codeHashes = recoveryCodes.map((c) => hashRecoveryCode(tenant.id, fresh.recordId, normalizeRecoveryCode(c)!));
    if (!(await tx.twoFactor.enableTwoFactor(tenant.id, fresh.recordId, { secretEnc: state.pendingSecretEnc, lastStep: check.step, seq }, codeHashes, now)))
      throw new Error("member changed under its row lock");
    // Like a password change: a session someone else holds (the reason to turn 2FA on) ends here;
    // the one that enrolled stays.
    await tx.sessions.deleteMemberSessions(tenant.id, fresh.recordId, session.idHash);
    await tx.audit.insertAuditEvent(tenant.id, { memberId: fresh.recordId, type: "two_factor_enabled", ip: context.ip, userAgent: context.userAgent }, now);
    return check;
  });
  deps.webhooks.notify();
  if (!outcome.ok) throwForFailedCheck(outcome);
  return recoveryCodes;
}

export interface DisableTwoFactorInput {
  password?: string;
  code?: string;
}

/** Disabling needs the password or a current code (TOTP or recovery): a session alone is not enough. */
export async function disableTwoFactor(
  deps: Deps,
  tenant: Tenant,
  session: ActiveSession,
  input: DisableTwoFactorInput,
  context: RequestContext,
): Promise<void> {
  const now = deps.clock.now();
  const member = await findSessionMember(deps, tenant, session);
  if (member.twoFactorStatus !== "Enabled") throw new AuthError("invalid_state", { message: "Two-factor authentication is not enabled." });
  if (input.password !== undefined) {
    await checkCurrentPassword(deps, tenant, member, input.password, context, { message: "The password is incorrect." });
  } else if (input.code !== undefined) {
    await verifySecondFactor(deps, tenant, member, input.code, context, now);
  } else {
    throw new AuthError("validation_failed", {
      message: "Give the password or a two-factor code.",
      details: [{ field: "password", rule: "required", message: "password or code is required" }],
    });
  }
  await deps.store.transaction(async (tx) => {
    // contract.md#d20: decided again on the locked row: 2FA turned off, or the password changed, since it was read.
    const fresh = await tx.members.findMemberById(tenant.id, member.recordId, { lock: true });
    if (fresh?.twoFactorStatus !== "Enabled") throw new AuthError("invalid_state", { message: "Two-factor authentication is not enabled." });
    if (input.password !== undefined && fresh.passwordHash !== member.passwordHash)
      throw new AuthError("invalid_credentials", { message: "The password is incorrect." });
    if (!(await tx.twoFactor.disableTwoFactor(tenant.id, member.recordId, now))) throw new Error("member changed under its row lock");
    await tx.audit.insertAuditEvent(tenant.id, { memberId: member.recordId, type: "two_factor_disabled", ip: context.ip, userAgent: context.userAgent }, now);
    await enqueueSecurityAlert(tx, deps, tenant, member, "two_factor_disabled", context, now);
  });
  deps.webhooks.notify();
}

/** A new set of recovery codes for a current code; the old set stops working. */
export async function regenerateRecoveryCodes(deps: Deps, tenant: Tenant, session: ActiveSession, code: string, context: RequestContext): Promise<string[]> {
  const now = deps.clock.now();
  const member = await findSessionMember(deps, tenant, session);
  if (member.twoFactorStatus !== "Enabled") throw new AuthError("invalid_state", { message: "Two-factor authentication is not enabled." });
  await verifySecondFactor(deps, tenant, member, code, context, now);
  const recoveryCodes = generateRecoveryCodes(deps.random);
  await deps.store.transaction(async (tx) => {
    // contract.md#d20: decided again on the locked row, so codes are never written back for a member whose
    // 2FA was disabled meanwhile, and two regenerations run one after the other (one set survives).
    const fresh = await tx.members.findMemberById(tenant.id, member.recordId, { lock: true });
    if (fresh?.twoFactorStatus !== "Enabled") throw new AuthError("invalid_state", { message: "Two-factor authentication is not enabled." });
    await tx.twoFactor.replaceRecoveryCodes(
      tenant.id,
      member.recordId,
      recoveryCodes.map((c) => hashRecoveryCode(tenant.id, member.recordId, normalizeRecoveryCode(c)!)),
    );
    await tx.audit.insertAuditEvent(
      tenant.id,
      { memberId: member.recordId, type: "recovery_codes_regenerated", ip: context.ip, userAgent: context.userAgent },
      now,
    );
  });
  return recoveryCodes;
}
