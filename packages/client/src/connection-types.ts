/**
 * The admin calls on a tenant's connections to identity providers (the service's
 * decisions.md#federated-connections), by hand like types.ts and proved equal to
 * src/http/routes/connections.ts by test/client-types.test.ts. The client secret goes in and never
 * comes back.
 */

/** `oidc` (any issuer with discovery), a preset that fills the issuer, or `github`. */
export type ConnectionType = "oidc" | "google" | "microsoft" | "apple" | "gitlab" | "github";
/**
 * `id`: a slug, `[a-z0-9-]{1,32}`. `issuer` required for `oidc`, overriding a preset's; for `github`
 * a GitHub Enterprise Server's base URL, none for github.com. `scopes` default `openid email profile` (`read:user user:email` for github);
 * `allowSignup` default true; `emailDomains` limits sign-ups to those domains.
 */
export type CreateConnectionRequest = {
  id: string;
  type: ConnectionType;
  displayName: string;
  issuer?: string;
  clientId: string;
  clientSecret: string;
  scopes?: string[];
  allowSignup?: boolean;
  emailDomains?: string[] | null;
};
/** Any field but `id`; `clientSecret` replaces the stored one; `issuer: null` goes back to the preset's. */
export type UpdateConnectionRequest = {
  type?: ConnectionType;
  displayName?: string;
  issuer?: string | null;
  clientId?: string;
  clientSecret?: string;
  scopes?: string[];
  allowSignup?: boolean;
  emailDomains?: string[] | null;
};
/** Never the secret. `redirectUri`: the callback URL to register at the provider. Times are ISO 8601. */
export type Connection = {
  id: string;
  type: ConnectionType;
  displayName: string;
  issuer: string | null;
  clientId: string;
  scopes: string[];
  allowSignup: boolean;
  emailDomains: string[] | null;
  redirectUri: string;
  createdAt: string;
  updatedAt: string;
};
export type ConnectionResponse = { success: true; connection: Connection };
export type ConnectionListResponse = { success: true; connections: Connection[] };
export type DeletedConnectionResponse = { success: true; id: string };

export interface LatchConnectionCalls {
  createConnection(body: CreateConnectionRequest): Promise<ConnectionResponse>;
  listConnections(): Promise<ConnectionListResponse>;
  updateConnection(id: string, body: UpdateConnectionRequest): Promise<ConnectionResponse>;
  /** Every member's link to the connection goes with it. */
  deleteConnection(id: string): Promise<DeletedConnectionResponse>;
}
