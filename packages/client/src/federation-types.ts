/**
 * The member-facing calls of federated sign-in (the service's decisions.md#federated-sign-in), by
 * hand like types.ts and proved equal to src/http/routes/federation.ts by test/client-types.test.ts.
 * The start and the provider's callback are browser navigations, not calls: `federatedStartUrl`
 * builds the start's URL for a link or a redirect.
 */
import type { MessageResponse } from "./types.js";

/** A "Continue with {displayName}" button: `startUrl` is `/auth/federated/{id}/start`. Never a client id or secret. */
export type SignInConnection = { id: string; displayName: string; startUrl: string };
export type SignInConnectionListResponse = { success: true; connections: SignInConnection[] };
/** A provider the member can sign in with. `email`: what the provider last said, never used to match. Times are ISO 8601. */
export type Identity = { id: string; connection: string; displayName: string; email: string | null; createdAt: string; lastUsedAt: string | null };
export type IdentityListResponse = { success: true; identities: Identity[] };
/** contract.md#d24 re-authentication, as changeEmail's; `returnTo` a path on the tenant's site to land on after the link. */
export type StartIdentityLinkRequest = { password?: string; twoFACode?: string; returnTo?: string };
/** Send the browser to `redirect` (the provider); in server code pass `setCookies()` (the `latch_fed` cookie) on to it first. */
export type IdentityLinkStartResponse = { success: true; redirect: string };
/** contract.md#d24 re-authentication: `password` when the member has one, `twoFACode` when 2FA is on. */
export type UnlinkIdentityRequest = { password?: string; twoFACode?: string };
/** A TOTP or recovery code, after a callback that sent the browser to the second step. */
export type FinishFederatedSecondFactorRequest = { twoFACode: string };
/** Signed in (the session cookie is set); `redirect`: where the sign-in started for. */
export type FederatedLoginResponse = { success: true; recordid: string; redirect: string };
export type FederatedLinkResponse = { success: true; message: string; redirect: string };

/**
 * Each needs a cookie the callback left in the browser (`__Host-latch_fed_pending`) or a session: in a
 * browser it goes by itself; server code forwards it with `withRequest`.
 */
export interface LatchFederationCalls {
  listSignInConnections(): Promise<SignInConnectionListResponse>;
  listIdentities(): Promise<IdentityListResponse>;
  startIdentityLink(connection: string, body: StartIdentityLinkRequest): Promise<IdentityLinkStartResponse>;
  unlinkIdentity(id: string, body?: UnlinkIdentityRequest): Promise<MessageResponse>;
  finishFederatedSecondFactor(body: FinishFederatedSecondFactorRequest): Promise<FederatedLoginResponse>;
  /** Signed in (any way) in the browser the callback sent to `/ui/federated-link`, with its pending cookie. */
  confirmFederatedLink(): Promise<FederatedLinkResponse>;
}
