/**
 * Registration by password (spec 4.1, state "(no record)" -> "Email Verification Pending") and
 * the public resend of the verification email (D15). Neither answer reveals whether the email
 * was already registered (D5).
 */
import type { Deps } from "../deps.js";
import { enqueueAfterAnswer } from "../events/outbox.js";
import { randomIntBetween } from "../core/random.js";
import type { Member, RequestContext, Tenant } from "../model.js";
import { normalizeEmail, normalizeName } from "../security/identity.js";
import { distinctIpRules, rateRules } from "../security/rate-limit.js";
import type { NewMember } from "../store/members.js";
import { countDistinctIps, enforceRateLimit, verifyBotChallenge } from "./guards.js";
import { checkNewPassword, hashNewPassword } from "./passwords.js";
import { enqueueVerificationEmail, isAwaitingVerification } from "./verification.js";

export const REGISTERED_MESSAGE = "Registration successful. Please check your email to verify your account.";
export const RESEND_MESSAGE = "If an account with that email is waiting for verification, a new verification email has been sent.";

const RECORD_ID_MIN = 10 ** 14;
const RECORD_ID_MAX = 2 ** 53;

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

/** The checks both kinds of registration share (spec 4.1), in the spec's order; returns the normalised identity. */
export async function checkRegistration(deps: Deps, tenant: Tenant, input: RegistrationRequest, context: RequestContext, now: number): Promise<{ email: string; name: string }> {
  const email = normalizeEmail(input.email);
  const name = normalizeName(input.name);
  await verifyBotChallenge(deps, tenant, input.botToken, context);
  await enforceRateLimit(deps, tenant, rateRules.registerPerIp, context.ip, now);
  // Counted before the per-email limit, which would otherwise refuse the 4th IP before the 5th is seen.
  await warnOnManyRegistrationIps(deps, tenant, email, context, now);
  await enforceRateLimit(deps, tenant, rateRules.registerPerEmail, email, now);
  return { email, name };
}

/** Spec 8.2: 5 or more IPs registering one email within an hour is logged, and allowed. */
async function warnOnManyRegistrationIps(deps: Deps, tenant: Tenant, email: string, context: RequestContext, now: number): Promise<void> {
  const rule = distinctIpRules.registrationIpsPerEmail;
  const distinctIps = await countDistinctIps(deps.counters, tenant, rule, email, context.ip, now);
  if (distinctIps >= rule.threshold) deps.log.warn({ tenantId: tenant.id, rule: rule.name, distinctIps }, "many IPs registering one email");
}

/** D8: a random integer in [10^14, 2^53): not sequential, so ids reveal no member count. */
function newRecordId(deps: Deps): number {
  return randomIntBetween(deps.random, RECORD_ID_MIN, RECORD_ID_MAX);
}

export async function registerWithPassword(deps: Deps, tenant: Tenant, input: RegisterPasswordInput, context: RequestContext): Promise<RegistrationResult> {
  const now = deps.clock.now();
  const { email, name } = await checkRegistration(deps, tenant, input, context, now);
  const password = await checkNewPassword(deps, input.password);
  // Hashed before the lookup, so a taken email costs the same as a free one.
  const hashed = await hashNewPassword(deps, password);
  const recordId = await createMember(deps, tenant, { email, name, ...hashed, authenticationType: "Password" }, context, now);
  return { recordid: String(recordId), message: REGISTERED_MESSAGE };
}

/**
 * Inserts the member with its verification email, or, when the email is taken, resends to a
 * still-pending member and returns a decoy id that is stored nowhere.
 */
export async function createMember(deps: Deps, tenant: Tenant, fields: Omit<NewMember, "recordId">, context: RequestContext, now: number): Promise<number> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const recordId = newRecordId(deps);
    const outcome = await deps.store.transaction(async (tx) => {
      const existing = await tx.members.findMemberByEmail(tenant.id, fields.email);
      if (existing) {
        if (isAwaitingVerification(existing)) await enqueueVerificationEmail(tx, deps, tenant, existing, now);
        await tx.audit.insertAuditEvent(tenant.id, { memberId: existing.recordId, type: "registration_repeated", ip: context.ip, userAgent: context.userAgent }, now);
        return "existing";
      }
      if (!(await tx.members.insertMember(tenant.id, { ...fields, recordId }, now))) return "id_taken";
      await enqueueVerificationEmail(tx, deps, tenant, { recordId, email: fields.email, name: fields.name }, now);
      const details = { authenticationType: fields.authenticationType };
      await tx.audit.insertAuditEvent(tenant.id, { memberId: recordId, type: "registered", ip: context.ip, userAgent: context.userAgent, details }, now);
      return "created";
    });
    if (outcome === "created") {
      deps.webhooks.notify();
      return recordId;
    }
    if (outcome === "existing") {
      deps.webhooks.notify();
      return newRecordId(deps);
    }
  }
  throw new Error("could not allocate a record id");
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
  // Whether anything is sent must not show in the answer's timing: the lookup and writes run after it.
  enqueueAfterAnswer(deps, "verification resend", async (tx) => {
    const member: Member | undefined = await tx.members.findMemberByEmail(tenant.id, email);
    if (!isAwaitingVerification(member)) return false;
    await enqueueVerificationEmail(tx, deps, tenant, member, now);
    await tx.audit.insertAuditEvent(tenant.id, { memberId: member.recordId, type: "verification_resent", ip: context.ip, userAgent: context.userAgent }, now);
    return true;
  });
  return RESEND_MESSAGE;
}
