/**
 * contract.md#d26: adding a passkey. The options call re-authenticates as contract.md#d24's account changes do: a passkey
 * is a permanent way in, so a stolen session must not add one alone. Registration asks for a
 * discoverable credential with user verification, attestation none; at most MAX_PASSKEYS_PER_MEMBER.
 */
import {
  generateRegistrationOptions,
  verifyRegistrationResponse,
  type PublicKeyCredentialCreationOptionsJSON,
  type RegistrationResponseJSON,
} from "@simplewebauthn/server";
import { randomToken } from "../../core/random.js";
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import { type RequestContext, type Tenant } from "../../model.js";
import { sha256Hex } from "../../security/hashing.js";
import { iso } from "../kernel/member-view.js";
import { enqueueSecurityAlert } from "../kernel/security-alerts.js";
import { lockSessionMember } from "../kernel/reauthentication.js";
import { reauthenticate, type Reauthentication } from "../kernel/reauthentication.js";
import { findSessionMember, type ActiveSession } from "../kernel/sessions.js";
import { MAX_CREDENTIAL_ID_BYTES, MAX_PASSKEYS_PER_MEMBER, PASSKEY_CHALLENGE_LIFETIME_MS } from "../../rules.js";
import { FRAMED_REFUSAL, ranInForeignFrame, relyingParty, useChallenge, userHandle } from "./ceremony.js";
import { passkeyName, passkeyView, type PasskeyView } from "./manage.js";

/** Ed25519, ES256, RS256: what platform and roaming authenticators offer. */
const ALGORITHMS = [-8, -7, -257];

/** The transports WebAuthn defines; anything else a client reports is dropped. */
const TRANSPORTS = new Set(["ble", "cable", "hybrid", "internal", "nfc", "smart-card", "usb"]);

function tooMany(): AuthError {
  return new AuthError("conflict", { message: `You have ${MAX_PASSKEYS_PER_MEMBER} passkeys. Remove one before adding another.` });
}

/**
 * Registration options for the session's member. Adding a way in is an account change a stolen
 * session must not make alone: contract.md#d24's re-authentication (the password when the member has one, else
 * a session at most FRESH_SESSION_MS old; and the second factor when it is on).
 */
export async function startPasskeyRegistration(
  deps: Deps,
  tenant: Tenant,
  session: ActiveSession,
  input: Reauthentication,
  context: RequestContext,
): Promise<PublicKeyCredentialCreationOptionsJSON> {
  const member = await findSessionMember(deps, tenant, session);
  await reauthenticate(deps, tenant, session, member, input, context);
  const now = deps.clock.now();
  const existing = await deps.store.passkeys.listMemberPasskeys(tenant.id, member.recordId);
  if (existing.length >= MAX_PASSKEYS_PER_MEMBER) throw tooMany();
  const { rpID } = relyingParty(deps, tenant);
  const options = await generateRegistrationOptions({
    rpName: tenant.domain,
    rpID,
    userID: userHandle(member.recordId),
    userName: member.email,
    userDisplayName: member.name || member.email,
    challenge: new Uint8Array(deps.random.bytes(32)),
    timeout: PASSKEY_CHALLENGE_LIFETIME_MS,
    attestationType: "none",
    excludeCredentials: existing.map((p) => ({ id: p.credentialId, transports: p.transports })),
    authenticatorSelection: { residentKey: "required", userVerification: "required" },
    supportedAlgorithmIDs: ALGORITHMS,
  });
  await deps.store.transaction(async (tx) => {
    // On the member's locked row, with the password it was decided on (contract.md#d20): of two calls at once,
    // the later voids the earlier's challenge, so one ceremony is ever open.
    const fresh = await lockSessionMember(tx, tenant, session, now);
    if (fresh.passwordHash !== member.passwordHash) throw new AuthError("unauthorized");
    await tx.passkeys.deleteMemberChallenges(tenant.id, member.recordId);
    await tx.passkeys.insertChallenge(tenant.id, sha256Hex(options.challenge), "registration", member.recordId, now, now + PASSKEY_CHALLENGE_LIFETIME_MS);
  });
  return options;
}

export interface FinishRegistrationInput {
  response: RegistrationResponseJSON;
  name: string | undefined;
}

export async function finishPasskeyRegistration(
  deps: Deps,
  tenant: Tenant,
  session: ActiveSession,
  input: FinishRegistrationInput,
  context: RequestContext,
): Promise<PasskeyView> {
  const now = deps.clock.now();
  const challenge = await useChallenge(deps, tenant, input.response, "registration", session.memberId, now);
  const { rpID, origins } = relyingParty(deps, tenant);
  const refused = (cause?: unknown, logFields?: Record<string, string>) =>
    new AuthError("validation_failed", { message: "The passkey could not be verified. Please try again.", cause, logFields });
  if (ranInForeignFrame(input.response)) throw refused(undefined, FRAMED_REFUSAL);
  let verification;
  try {
    verification = await verifyRegistrationResponse({
      response: input.response,
      expectedChallenge: challenge,
      expectedOrigin: origins,
      expectedRPID: rpID,
      requireUserVerification: true,
      supportedAlgorithmIDs: ALGORITHMS,
    });
  } catch (error) {
    throw refused(error);
  }
  if (!verification.verified) throw refused();
  const { credential, credentialDeviceType, credentialBackedUp } = verification.registrationInfo;
  // WebAuthn caps a credential id (MAX_CREDENTIAL_ID_BYTES); the id the browser reports must be the one it signed.
  if (credential.id !== input.response.id || Buffer.from(credential.id, "base64url").length > MAX_CREDENTIAL_ID_BYTES) throw refused();
  const passkey = {
    id: randomToken(deps.random, 16),
    memberId: session.memberId,
    credentialId: credential.id,
    publicKey: Buffer.from(credential.publicKey).toString("base64url"),
    counter: credential.counter,
    backupEligible: credentialDeviceType === "multiDevice",
    backedUp: credentialBackedUp,
    transports: (credential.transports ?? []).filter((t) => TRANSPORTS.has(t)).slice(0, TRANSPORTS.size),
    name: input.name === undefined ? `Passkey added ${iso(now).slice(0, 10)}` : passkeyName(input.name),
  };
  await deps.store.transaction(async (tx) => {
    const member = await lockSessionMember(tx, tenant, session, now);
    if ((await tx.passkeys.countMemberPasskeys(tenant.id, member.recordId)) >= MAX_PASSKEYS_PER_MEMBER) throw tooMany();
    if (!(await tx.passkeys.insertPasskey(tenant.id, passkey, now))) throw new AuthError("conflict", { message: "This passkey is already registered." });
    await tx.audit.insertAuditEvent(
      tenant.id,
      { memberId: member.recordId, type: "passkey_added", ip: context.ip, userAgent: context.userAgent, details: { passkey: passkey.id } },
      now,
    );
    await enqueueSecurityAlert(tx, deps, tenant, member, "passkey_added", context, now, { fields: { passkeyName: passkey.name } });
  });
  deps.webhooks.notify();
  return passkeyView({ ...passkey, createdAt: now, lastUsedAt: null });
}
