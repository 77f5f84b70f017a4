/**
 * contract.md#d26 passkeys, what every ceremony shares: the tenant as the relying party (RP ID its hostname,
 * answers accepted from `https://{hostname}` and its usable allowedOrigins on it), the user handle,
 * the one-use challenge (SHA-256, PASSKEY_CHALLENGE_LIFETIME_MS, used up before the answer is verified, so an answer
 * can't be replayed even when it fails), and the refusal of answers made in another site's frame.
 */
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import { type Tenant } from "../../model.js";
import { sha256Hex } from "../../security/hashing.js";
import type { ChallengePurpose } from "../../store/passkeys.js";
import { isUsableAllowedOrigin } from "../../core/tenant-settings.js";

/**
 * Whether a listed origin can answer for the RP ID: its host is the RP ID or under it. A browser runs
 * a ceremony only for an RP ID that is its page's host or a parent domain of it (WebAuthn's Related
 * Origin Requests aside, which need a /.well-known/webauthn that Latch does not serve), so a foreign
 * origin, listed for CORS (contract.md#d1), never gives an honest answer: it is not an expected origin.
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

/** The user handle: the member's record id, which is public (contract.md#d8) and never reused; no email. */
export function userHandle(recordId: number): Uint8Array<ArrayBuffer> {
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
export function ranInForeignFrame(response: { response: { clientDataJSON: string } }): boolean {
  const clientData = clientDataOf(response);
  if (clientData === undefined) return false; // unreadable: useChallenge has refused it already
  return (clientData.crossOrigin !== undefined && clientData.crossOrigin !== false) || clientData.topOrigin !== undefined;
}

/** On the refusal's log line; the answer is every other refused passkey's. */
export const FRAMED_REFUSAL = { rule: "passkey_cross_origin" } as const;

/**
 * Uses up the challenge an answer signed, before the answer is verified (so it counts once whether
 * it passes or not), and returns it; invalid_token when it is unreadable, expired, used, or not one
 * of this purpose and member.
 */
export async function useChallenge(
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
