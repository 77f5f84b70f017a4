/**
 * D26 passkeys (WebAuthn, with @simplewebauthn/server). The relying party is the tenant: its
 * hostname is the RP ID, and answers are accepted from `https://{hostname}` and its allowedOrigins.
 *
 * Every ceremony has a one-use challenge, stored as SHA-256 for 5 minutes and used up before the
 * answer is verified, so an answer can't be replayed even when it fails. A registration's challenge
 * belongs to the member who asked (after re-authentication, as D24's other account changes); a
 * login's belongs to no one, since the passkey is discoverable and names its member itself.
 *
 * A login needs user verification, satisfies the tenant's require2FA and asks for no TOTP. Its
 * counter must move forward (or stay 0 for authenticators that keep none): a counter that goes
 * back means a cloned key and is refused and audited. The counter is then written by a conditional
 * update from the value it was checked against, so two logins racing on one value can't both win.
 */
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
} from "@simplewebauthn/server";
import { randomToken } from "../core/random.js";
import type { Deps } from "../deps.js";
import { AuthError } from "../errors.js";
import { MemberStatus, type RequestContext, type Tenant } from "../model.js";
import { sha256Hex } from "../security/hashing.js";
import { isShowableName } from "../security/identity.js";
import type { ChallengePurpose, Passkey } from "../store/passkeys.js";
import { enforceRateLimit, verifyBotChallenge } from "./guards.js";
import { recordSuccessfulLogin } from "./login-context.js";
import { iso } from "./member-admin.js";
import { enqueueSecurityAlert } from "./security-alerts.js";
import { lockSessionMember } from "./reauthentication.js";
import { reauthenticate, type Reauthentication } from "./self-service.js";
import { createSession, findSessionMember, type ActiveSession, type IssuedSession } from "./sessions.js";
import { isUsableAllowedOrigin } from "./tenant-settings.js";
import { MAX_PASSKEYS_PER_MEMBER, PASSKEY_CHALLENGE_LIFETIME_MS, rateRules } from "../rules.js";

const NAME_MAX = 64;
const NO_MEMBER = 0;
/** Ed25519, ES256, RS256: what platform and roaming authenticators offer. */
const ALGORITHMS = [-8, -7, -257];

export interface PasskeyView {
  id: string;
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
  /** Synced to the member's other devices (a multi-device credential that is backed up). */
  backedUp: boolean;
}

function view(passkey: Passkey): PasskeyView {
  return {
    id: passkey.id,
    name: passkey.name,
    createdAt: iso(passkey.createdAt),
    lastUsedAt: passkey.lastUsedAt === null ? null : iso(passkey.lastUsedAt),
    backedUp: passkey.backedUp,
  };
}

/**
 * Whether a listed origin can answer for the RP ID: its host is the RP ID or under it. A browser runs
 * a ceremony only for an RP ID that is its page's host or a parent domain of it (WebAuthn's Related
 * Origin Requests aside, which need a /.well-known/webauthn that Latch does not serve), so a foreign
 * origin, listed for CORS (D1), never gives an honest answer: it is not an expected origin.
 */
function isOnRelyingParty(origin: string, rpID: string): boolean {
  try {
    const host = new URL(origin).hostname;
    return host === rpID || host.endsWith(`.${rpID}`);
  } catch {
    return false;
  }
}

/**
 * The tenant as a relying party: `https://{hostname}` and the usable `allowedOrigins` on the hostname
 * or under it. Dev mode's own tenant is served from http://localhost:<port>.
 */
export function relyingParty(deps: Deps, tenant: Tenant): { rpID: string; origins: string[] } {
  const listed = tenant.settings.allowedOrigins.filter((origin) => isUsableAllowedOrigin(origin) && isOnRelyingParty(origin, tenant.domain));
  const origins = [`https://${tenant.domain}`, ...listed];
  const devBase = deps.dev?.linkBaseFor(tenant.domain);
  if (devBase) origins.push(devBase);
  return { rpID: tenant.domain, origins };
}

/** The user handle: the member's record id, which is public (D8) and never reused; no email. */
function userHandle(recordId: number): Uint8Array<ArrayBuffer> {
  return new TextEncoder().encode(String(recordId));
}

/** The answer's clientDataJSON, parsed; undefined when it is not a JSON object. */
function clientDataOf(response: { response: { clientDataJSON: string } }): Record<string, unknown> | undefined {
  try {
    const clientData: unknown = JSON.parse(Buffer.from(response.response.clientDataJSON, "base64url").toString("utf8"));
    return clientData !== null && typeof clientData === "object" ? (clientData as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The challenge the browser signed, from the answer's clientDataJSON; undefined when unreadable. */
function challengeOf(response: { response: { clientDataJSON: string } }): string | undefined {
  const challenge = clientDataOf(response)?.challenge;
  return typeof challenge === "string" && challenge.length > 0 ? challenge : undefined;
}

/**
 * Whether the browser ran the ceremony in a frame inside another origin's page: clientData's
 * `crossOrigin` is then true (and `topOrigin`, where sent, names that page). Latch's ceremonies run
 * on the tenant's pages or a listed origin's, never framed by another site, where a page of the
 * attacker's could dress the ceremony up as something else. @simplewebauthn/server 14 never checks
 * it on registration, and on authentication only when `topOrigin` is present (Safari sends none),
 * so it is checked here, after the challenge is used up (the answer counts once) and before the
 * library, so every such refusal is logged under its own rule.
 */
function ranInForeignFrame(response: { response: { clientDataJSON: string } }): boolean {
  const clientData = clientDataOf(response);
  if (clientData === undefined) return false; // unreadable: useChallenge has refused it already
  return (clientData.crossOrigin !== undefined && clientData.crossOrigin !== false) || clientData.topOrigin !== undefined;
}

/** On the refusal's log line; the answer is every other refused passkey's. */
const FRAMED_REFUSAL = { rule: "passkey_cross_origin" } as const;

/**
 * Uses up the challenge an answer signed, before the answer is verified (so it counts once whether
 * it passes or not), and returns it; invalid_token when it is unreadable, expired, used, or not one
 * of this purpose and member.
 */
async function useChallenge(
  deps: Deps,
  tenant: Tenant,
  response: { response: { clientDataJSON: string } },
  purpose: ChallengePurpose,
  memberId: number,
  now: number,
): Promise<string> {
  const challenge = challengeOf(response);
  if (!challenge || !(await deps.store.passkeys.consumeChallenge(tenant.id, sha256Hex(challenge), purpose, memberId, now))) {
    throw new AuthError("invalid_token", { message: "This passkey request has expired or was already used. Please try again." });
  }
  return challenge;
}

/** The transports WebAuthn defines; anything else a client reports is dropped. */
const TRANSPORTS = new Set(["ble", "cable", "hybrid", "internal", "nfc", "smart-card", "usb"]);

/**
 * A passkey's name, 1 to 64 characters once spaces are folded; no control or format characters (the
 * same rule as a member's name): the name goes into a security alert, where a right-to-left
 * override or a zero-width character could disguise it.
 */
function passkeyName(raw: string): string {
  const name = raw.normalize("NFC").replace(/\s+/g, " ").trim();
  if ([...name].length < 1 || [...name].length > NAME_MAX || !isShowableName(name, raw)) {
    throw new AuthError("validation_failed", {
      message: `Give the passkey a name of 1 to ${NAME_MAX} characters.`,
      details: [{ field: "name", rule: "passkey_name", message: "1 to 64 characters, no control or invisible formatting characters" }],
    });
  }
  return name;
}

function tooMany(): AuthError {
  return new AuthError("conflict", { message: `You have ${MAX_PASSKEYS_PER_MEMBER} passkeys. Remove one before adding another.` });
}

/**
 * Registration options for the session's member. Adding a way in is an account change a stolen
 * session must not make alone: D24's re-authentication (the password when the member has one, else
 * a session under 10 minutes old; and the second factor when it is on).
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
    // On the member's locked row, with the password it was decided on (D20): of two calls at once,
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
  // WebAuthn caps a credential id at 1023 bytes; the id the browser reports must be the one it signed.
  if (credential.id !== input.response.id || Buffer.from(credential.id, "base64url").length > 1023) throw refused();
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
  return view({ ...passkey, createdAt: now, lastUsedAt: null });
}

export async function listPasskeys(deps: Deps, tenant: Tenant, session: ActiveSession): Promise<PasskeyView[]> {
  return (await deps.store.passkeys.listMemberPasskeys(tenant.id, session.memberId)).map(view);
}

function noSuchPasskey(): AuthError {
  return new AuthError("not_found", { message: "No such passkey." });
}

export async function renamePasskey(deps: Deps, tenant: Tenant, session: ActiveSession, id: string, name: string): Promise<PasskeyView> {
  const clean = passkeyName(name);
  if (!(await deps.store.passkeys.renamePasskey(tenant.id, session.memberId, id, clean))) throw noSuchPasskey();
  const passkey = (await deps.store.passkeys.listMemberPasskeys(tenant.id, session.memberId)).find((p) => p.id === id);
  if (!passkey) throw noSuchPasskey();
  return view(passkey);
}

export async function deletePasskey(deps: Deps, tenant: Tenant, session: ActiveSession, id: string, context: RequestContext): Promise<void> {
  const now = deps.clock.now();
  await deps.store.transaction(async (tx) => {
    const member = await lockSessionMember(tx, tenant, session, now);
    const removed = await tx.passkeys.deletePasskey(tenant.id, member.recordId, id);
    if (!removed) throw noSuchPasskey();
    await tx.audit.insertAuditEvent(
      tenant.id,
      { memberId: member.recordId, type: "passkey_removed", ip: context.ip, userAgent: context.userAgent, details: { passkey: id } },
      now,
    );
    await enqueueSecurityAlert(tx, deps, tenant, member, "passkey_removed", context, now, { fields: { passkeyName: removed.name } });
  });
  deps.webhooks.notify();
}

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

export type PasskeyLoginResult = { authorized: true; recordid: string; redirectUrl: string; session: IssuedSession };

export async function finishPasskeyLogin(
  deps: Deps,
  tenant: Tenant,
  response: AuthenticationResponseJSON,
  context: RequestContext,
): Promise<PasskeyLoginResult> {
  return deps.metrics.countLogin(
    "passkey",
    () => loginWithPasskey(deps, tenant, response, context),
    () => true,
  );
}

async function loginWithPasskey(deps: Deps, tenant: Tenant, response: AuthenticationResponseJSON, context: RequestContext): Promise<PasskeyLoginResult> {
  const now = deps.clock.now();
  const challenge = await useChallenge(deps, tenant, response, "login", NO_MEMBER, now);
  const refused = (cause?: unknown, logFields?: Record<string, string>) =>
    new AuthError("invalid_credentials", { message: "This passkey could not be verified.", cause, logFields });
  if (ranInForeignFrame(response)) throw refused(undefined, FRAMED_REFUSAL);
  // Looked up in this tenant only: another tenant's credential is simply unknown here (D26: RP ID = hostname).
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
    deps.log.warn({ tenantId: tenant.id, passkey: passkey.id }, "passkey counter went backwards: a cloned authenticator?");
    throw refused();
  }
  const session = await deps.store.transaction(async (tx) => {
    const member = await tx.members.findMemberById(tenant.id, passkey.memberId, { lock: true });
    if (!member) throw refused();
    // Refused as a magic link is (D26): a lock wins, and a pending account has no login.
    if (member.status === MemberStatus.locked) throw new AuthError("account_locked");
    if (member.status === MemberStatus.pending) throw new AuthError("email_not_verified");
    if (!(await tx.passkeys.recordUse(tenant.id, passkey.id, passkey.counter, newCounter, credentialBackedUp, now))) throw refused();
    // Like any successful login it clears the password lockout (D13).
    await tx.limits.clearLockout(tenant.id, member.email);
    const issued = await createSession(tx, deps, tenant, member.recordId, context, now, { byPasskey: true });
    await recordSuccessfulLogin(tx, deps, tenant, member, "passkey", context, now);
    return issued;
  });
  deps.webhooks.notify();
  return { authorized: true, recordid: String(passkey.memberId), redirectUrl: tenant.settings.loginSuccessRedirect, session };
}
