/**
 * contract.md#d26: signing in with a passkey. The passkey is discoverable and names its member itself, so a
 * login's challenge belongs to no one until it is answered. A login needs user verification,
 * satisfies the tenant's require2FA and asks for no TOTP. Its counter must move forward (or stay 0
 * for authenticators that keep none): one that goes back means a cloned key and is refused and
 * audited; the counter is written by a conditional update from the value it was checked against,
 * so two logins racing on one value can't both win.
 */
import {
  generateAuthenticationOptions,
  verifyAuthenticationResponse,
  type AuthenticationResponseJSON,
  type PublicKeyCredentialRequestOptionsJSON,
} from "@simplewebauthn/server";
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import { MemberStatus, type RequestContext, type Tenant } from "../../model.js";
import { sha256Hex } from "../../security/hashing.js";
import { enforceRateLimit, verifyBotChallenge } from "../kernel/guards.js";
import { recordSuccessfulLogin } from "../kernel/login-context.js";
import { signedIn, type SignedIn } from "../kernel/login-outcome.js";
import { createSession, PASSKEY_AMR } from "../kernel/sessions.js";
import { PASSKEY_CHALLENGE_LIFETIME_MS, rateRules } from "../../rules.js";
import { FRAMED_REFUSAL, ranInForeignFrame, relyingParty, useChallenge, userHandle } from "./ceremony.js";

/** A login challenge belongs to no one until the passkey names its member. */
const NO_MEMBER = 0;

/** Login options: behind the bot check and a per-IP limit, since each stores a challenge. */
export async function startPasskeyLogin(
  deps: Deps,
  tenant: Tenant,
  botToken: string | undefined,
  context: RequestContext,
): Promise<PublicKeyCredentialRequestOptionsJSON> {
  const now = deps.clock.now();
  await verifyBotChallenge(deps, tenant, botToken, context);
  await enforceRateLimit(deps, tenant, rateRules.passkeyLoginPerIp, context.ip, now);
  const options = await generateAuthenticationOptions({
    rpID: relyingParty(deps, tenant).rpID,
    userVerification: "required",
    challenge: new Uint8Array(deps.random.bytes(32)),
    timeout: PASSKEY_CHALLENGE_LIFETIME_MS,
  });
  await deps.store.passkeys.insertChallenge(tenant.id, sha256Hex(options.challenge), "login", NO_MEMBER, now, now + PASSKEY_CHALLENGE_LIFETIME_MS);
  return options;
}

export async function finishPasskeyLogin(deps: Deps, tenant: Tenant, response: AuthenticationResponseJSON, context: RequestContext): Promise<SignedIn> {
  return deps.metrics.countLogin(
    "passkey",
    () => loginWithPasskey(deps, tenant, response, context),
    () => true,
  );
}

async function loginWithPasskey(deps: Deps, tenant: Tenant, response: AuthenticationResponseJSON, context: RequestContext): Promise<SignedIn> {
  const now = deps.clock.now();
  const challenge = await useChallenge(deps, tenant, response, "login", NO_MEMBER, now);
  const refused = (cause?: unknown, logFields?: Record<string, string>) =>
    new AuthError("invalid_credentials", { message: "This passkey could not be verified.", cause, logFields });
  if (ranInForeignFrame(response)) throw refused(undefined, FRAMED_REFUSAL);
  // Looked up in this tenant only: another tenant's credential is simply unknown here (contract.md#d26: RP ID = hostname).
  const passkey = await deps.store.passkeys.findByCredentialId(tenant.id, response.id);
  if (!passkey) throw refused();
  const handle = response.response.userHandle;
  if (handle !== undefined && handle !== Buffer.from(userHandle(passkey.memberId)).toString("base64url")) throw refused();
  const { rpID, origins } = relyingParty(deps, tenant);
  let verification;
  try {
    // The counter is checked below, after the signature, so only the key's holder can trip the clone alarm.
    verification = await verifyAuthenticationResponse({
      response,
      expectedChallenge: challenge,
      expectedOrigin: origins,
      expectedRPID: rpID,
      requireUserVerification: true,
      credential: {
        id: passkey.credentialId,
        publicKey: new Uint8Array(Buffer.from(passkey.publicKey, "base64url")),
        counter: 0,
        transports: passkey.transports,
      },
    });
  } catch (error) {
    throw refused(error);
  }
  if (!verification.verified) throw refused();
  const { newCounter, credentialBackedUp } = verification.authenticationInfo;
  if ((passkey.counter > 0 || newCounter > 0) && newCounter <= passkey.counter) {
    const details = { passkey: passkey.id, stored: passkey.counter, presented: newCounter };
    await deps.store.audit.insertAuditEvent(
      tenant.id,
      { memberId: passkey.memberId, type: "passkey_counter_regressed", ip: context.ip, userAgent: context.userAgent, details },
      now,
    );
    deps.log.warn({ tenant: tenant.domain, passkey: passkey.id }, "passkey counter went backwards: a cloned authenticator?");
    throw refused();
  }
  const session = await deps.store.transaction(async (tx) => {
    const member = await tx.members.findMemberById(tenant.id, passkey.memberId, { lock: true });
    if (!member) throw refused();
    // Refused as a magic link is (contract.md#d26): a lock wins, and a pending account has no login.
    if (member.status === MemberStatus.locked) throw new AuthError("account_locked");
    if (member.status === MemberStatus.pending) throw new AuthError("email_not_verified");
    if (!(await tx.passkeys.recordUse(tenant.id, passkey.id, passkey.counter, newCounter, credentialBackedUp, now))) throw refused();
    // Like any successful login it clears the password lockout (contract.md#d13).
    await tx.limits.clearLockout(tenant.id, member.email);
    const issued = await createSession(tx, deps, tenant, member.recordId, context, now, { amr: PASSKEY_AMR, byPasskey: true });
    await recordSuccessfulLogin(tx, deps, tenant, member, "passkey", context, now);
    return issued;
  });
  deps.webhooks.notify();
  return signedIn(tenant, passkey.memberId, session);
}
