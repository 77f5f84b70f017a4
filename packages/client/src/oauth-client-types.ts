/**
 * The admin calls on a tenant's OAuth clients, the applications that sign its members in through
 * its OpenID Provider (the service's decisions.md#openid-provider-clients), by hand like types.ts and
 * proved equal to src/http/routes/oauth-clients.ts by test/client-types.test.ts. A confidential
 * client's secret comes back once, in the creation's answer.
 */

/** `confidential`: a server that keeps a secret; `public`: a browser or native app (no secret, PKCE S256). */
export type OauthClientType = "confidential" | "public";
/**
 * Redirect URIs are matched exactly: absolute, canonical, no fragment, wildcard or credentials;
 * `https:`, `http:` only for loopback hosts, or a private-use scheme (`com.example.app:/cb`) for a
 * public client. `firstParty` (default true) skips the consent page.
 */
export type CreateOauthClientRequest = {
  name: string;
  type: OauthClientType;
  redirectUris: string[];
  postLogoutRedirectUris?: string[];
  firstParty?: boolean;
};
/** At least one field; a list given replaces the stored one. The type and the secret never change. */
export type UpdateOauthClientRequest = {
  name?: string;
  redirectUris?: string[];
  postLogoutRedirectUris?: string[];
  firstParty?: boolean;
};
/** Never the secret. Times are ISO 8601. */
export type OauthClient = {
  clientId: string;
  name: string;
  type: OauthClientType;
  firstParty: boolean;
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  createdAt: string;
  updatedAt: string;
};
/** The new client; `clientSecret`: a confidential client's secret, shown this once (Latch keeps only its hash). */
export type CreatedOauthClient = {
  clientId: string;
  name: string;
  type: OauthClientType;
  firstParty: boolean;
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  createdAt: string;
  updatedAt: string;
  clientSecret?: string;
};
export type CreatedOauthClientResponse = { success: true; client: CreatedOauthClient };
export type OauthClientResponse = { success: true; client: OauthClient };
export type OauthClientListResponse = { success: true; clients: OauthClient[] };
export type DeletedOauthClientResponse = { success: true; clientId: string };

export interface LatchOauthClientCalls {
  createOauthClient(body: CreateOauthClientRequest): Promise<CreatedOauthClientResponse>;
  listOauthClients(): Promise<OauthClientListResponse>;
  getOauthClient(clientId: string): Promise<OauthClientResponse>;
  updateOauthClient(clientId: string, body: UpdateOauthClientRequest): Promise<OauthClientResponse>;
  /** Every grant given to the client goes with it (its codes and refresh tokens). */
  deleteOauthClient(clientId: string): Promise<DeletedOauthClientResponse>;
}
