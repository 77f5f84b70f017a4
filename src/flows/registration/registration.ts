/**
 * Registration by password (contract.md#spec-4-1, state "(no record)" -> "Email Verification Pending") and
 * the public resend of the verification email (contract.md#d15). Neither answer reveals whether the email
 * was already registered (contract.md#d5), and both only commit an email request (contract.md#d19): what it becomes (a
 * pending account, one more registration of it, or an `account_exists` notice, contract.md#d18) is decided by
 * the worker in flows/kernel/email-requests.ts.
 */
import type { Deps } from "../../deps.js";
import type { AuthenticationType, RequestContext, Tenant } from "../../model.js";
import { normalizeEmail, normalizeName } from "../../security/identity.js";
import { distinctIpRules, rateRules } from "../../rules.js";
import { enqueueEmailRequest } from "../kernel/email-requests.js";
import { countDistinctIps, enforceRateLimit, verifyBotChallenge } from "../kernel/guards.js";
import { checkNewPassword, hashNewPassword } from "../kernel/passwords.js";
import { newRecordId } from "../kernel/record-ids.js";

export const REGISTERED_MESSAGE = "Registration successful. Please check your email to verify your account.";
export const RESEND_MESSAGE = "If an account with that email is waiting for verification, a new verification email has been sent.";

export interface RegisterPasswordInput extends RegistrationRequest {
  password: string;
}

export interface RegistrationResult {
  recordid: string;
  message: string;
}

export interface RegistrationRequest {
  email: string;
  name: string;
  botToken: string | undefined;
}

/** The checks both kinds of registration share (contract.md#spec-4-1), in the spec's order; returns the normalised identity. */
export async function checkRegistration(
  deps: Deps,
  tenant: Tenant,
  input: RegistrationRequest,
  context: RequestContext,
  now: number,
): Promise<{ email: string; name: string }> {
  const email = normalizeEmail(input.email);
  const name = normalizeName(input.name);
  await verifyBotChallenge(deps, tenant, input.botToken, context);
  await enforceRateLimit(deps, tenant, rateRules.registerPerIp, context.ip, now);
  // Counted before the per-email limit, which would otherwise refuse the 4th IP before the 5th is seen.
  await warnOnManyRegistrationIps(deps, tenant, email, context, now);
  await enforceRateLimit(deps, tenant, rateRules.registerPerEmail, email, now);
  return { email, name };
}

/** contract.md#spec-8-2: distinctIpRules.registrationIpsPerEmail, many IPs registering one email, is logged, and allowed. */
async function warnOnManyRegistrationIps(deps: Deps, tenant: Tenant, email: string, context: RequestContext, now: number): Promise<void> {
  const rule = distinctIpRules.registrationIpsPerEmail;
  const distinctIps = await countDistinctIps(deps.subjects, deps.counters, tenant, rule, email, context.ip, now);
  if (distinctIps >= rule.threshold) deps.log.warn({ tenant: tenant.domain, rule: rule.name, distinctIps }, "many IPs registering one email");
}

export async function registerWithPassword(deps: Deps, tenant: Tenant, input: RegisterPasswordInput, context: RequestContext): Promise<RegistrationResult> {
  const now = deps.clock.now();
  const { email, name } = await checkRegistration(deps, tenant, input, context, now);
  const password = await checkNewPassword(deps, input.password);
  const hashed = await hashNewPassword(deps, password);
  return requestRegistration(deps, tenant, { email, name, authenticationType: "Password", ...hashed }, context, now);
}

export interface CheckedRegistration {
  email: string;
  name: string;
  authenticationType: AuthenticationType;
  passwordHash: string | null;
  passwordSalt: string | null;
}

/**
 * Commits the registration as an email request under a fresh random record id and answers with
 * that id. For a taken email the id is a decoy that is stored nowhere (contract.md#d5).
 */
export async function requestRegistration(
  deps: Deps,
  tenant: Tenant,
  checked: CheckedRegistration,
  context: RequestContext,
  now: number,
): Promise<RegistrationResult> {
  const recordId = newRecordId(deps);
  const { email, ...registration } = checked;
  await enqueueEmailRequest(deps, tenant, "registration", email, context, now, { recordId, ...registration });
  return { recordid: String(recordId), message: REGISTERED_MESSAGE };
}

export interface ResendVerificationInput {
  email: string;
  botToken: string | undefined;
}

export async function resendVerification(deps: Deps, tenant: Tenant, input: ResendVerificationInput, context: RequestContext): Promise<string> {
  const now = deps.clock.now();
  const email = normalizeEmail(input.email);
  await verifyBotChallenge(deps, tenant, input.botToken, context);
  await enforceRateLimit(deps, tenant, rateRules.resendVerificationPerIp, context.ip, now);
  await enforceRateLimit(deps, tenant, rateRules.resendVerificationPerEmail, email, now);
  await enqueueEmailRequest(deps, tenant, "verification_resend", email, context, now);
  return RESEND_MESSAGE;
}

/** contract.md#spec-4-1 registration by email alone: a pending account without a password, its link to verify (contract.md#d18). */
export async function registerWithMagicLink(deps: Deps, tenant: Tenant, input: RegistrationRequest, context: RequestContext): Promise<RegistrationResult> {
  const now = deps.clock.now();
  const { email, name } = await checkRegistration(deps, tenant, input, context, now);
  return requestRegistration(deps, tenant, { email, name, passwordHash: null, passwordSalt: null, authenticationType: "Magic Link" }, context, now);
}
