/**
 * Table types, one interface per table (Kysely). Times are Unix milliseconds in integer columns.
 * Every tenant-owned table carries tenant_id and every unique index starts with it (STYLE habit 4).
 * SQLite has no boolean: flags are 0/1 integers. Secrets are never stored in the clear: *_hash is
 * SHA-256 hex, *_enc is AES-256-GCM under SECRETS_KEY (see security/secret-box.ts).
 */
import type { Generated } from "kysely";

export interface ApplicationsTable {
  id: string;
  api_key_hash: string;
  created_at: number;
  updated_at: number;
}

export interface TenantsTable {
  id: string;
  domain: string;
  application_id: string;
  settings: string;
  webhook_secret_enc: string;
  /** decisions.md#webhook-secret-rotation: the secret before the last rotation, also signing until its expiry. */
  webhook_previous_secret_enc: string | null;
  webhook_previous_secret_expires_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface MembersTable {
  tenant_id: string;
  id: number;
  email: string;
  name: string;
  status: string;
  has_password_auth: number;
  has_magic_link_auth: number;
  /** decisions.md#federated-sign-in: signed in through a connection at least once (migration 0017). */
  has_federated_auth: Generated<number>;
  password_hash: string | null;
  password_salt: string | null;
  email_verified: number;
  two_factor_status: string;
  totp_secret_enc: string | null;
  totp_pending_secret_enc: string | null;
  /** contract.md#d30: the SHA-256 of the session that started the pending enrolment (only it may see or finish it). */
  totp_pending_session_hash: string | null;
  /** contract.md#d30: 1 when that session re-authenticated as it started the enrolment. */
  totp_pending_reauthenticated: Generated<number>;
  totp_last_step: Generated<number>;
  two_factor_failures: Generated<number>;
  two_factor_locked_until: Generated<number>;
  /** contract.md#d22: the last session created by any login; null until the first. */
  last_login_at: number | null;
  created_at: number;
  updated_at: number;
  /** contract.md#d24: when 2FA was last turned on (null: before migration 0009). */
  two_factor_enabled_at: number | null;
  /** contract.md#d25: the latest expiry of a verification link sent to this pending account (null: count from created_at). */
  pending_until: number | null;
  /** contract.md#d30: bumped under the row lock for each "this wasn't me" link and each 2FA enrolment; orders them. */
  security_seq: Generated<number>;
  /** contract.md#d30: `security_seq` when 2FA was last turned on (null: before migration 0015, ordered by time). */
  two_factor_enabled_seq: number | null;
}

export interface SessionsTable {
  tenant_id: string;
  id_hash: string;
  member_id: number;
  created_at: number;
  expires_at: number;
  /** contract.md#d24: what the member sees and names a session by: random (older sessions: see migration 0009). */
  public_id: string;
  /** Written at most once a minute by the session check (contract.md#d24). */
  last_seen_at: number;
  ip: string | null;
  user_agent: string | null;
  country: string | null;
  /** contract.md#d26: opened by a passkey, which satisfies the tenant's require2FA (0/1). */
  by_passkey: Generated<number>;
  /** decisions.md#authentication-methods: JSON array of RFC 8176 values (migration 0021). */
  amr: Generated<string>;
}

export interface OneTimeTokensTable {
  tenant_id: string;
  token_hash: string;
  kind: string;
  member_id: number;
  created_at: number;
  expires_at: number;
  /** verify_email only (contract.md#d18): the registration whose password and name the link confirms; null for a resend. */
  registration_id: string | null;
  /** email_change only (contract.md#d24): the address the link confirms. */
  new_email: string | null;
  /** magic_login only (contract.md#d26): keyed hash of the emailed code, bound to token_hash; null on older rows. */
  code_hash: string | null;
  /** secure_account only (contract.md#d30): the member's `security_seq` when it was issued (null: before migration 0015). */
  seq: number | null;
}

/** contract.md#d26: a member's WebAuthn credential (passkey). */
export interface PasskeysTable {
  tenant_id: string;
  /** Ours, random: what the API and the pages name a passkey by. */
  id: string;
  member_id: number;
  /** The authenticator's credential id, base64url; unique per tenant (the tenant's hostname is the RP ID). */
  credential_id: string;
  /** The COSE public key, base64url. */
  public_key: string;
  counter: number;
  backup_eligible: number;
  backed_up: number;
  /** JSON array of the transports the browser reported. */
  transports: string;
  name: string;
  created_at: number;
  last_used_at: number | null;
}

/** contract.md#d26: a one-use WebAuthn challenge in flight, SHA-256 only. */
export interface PasskeyChallengesTable {
  tenant_id: string;
  challenge_hash: string;
  purpose: string;
  /** The member a registration is for; 0 for a login (anyone's passkey may answer it). */
  member_id: number;
  created_at: number;
  expires_at: number;
}

/** contract.md#d18: one registration of a still-pending account, with what using its link makes the account. */
export interface RegistrationsTable {
  tenant_id: string;
  id: string;
  member_id: number;
  name: string;
  authentication_type: string;
  password_hash: string | null;
  password_salt: string | null;
  created_at: number;
  expires_at: number;
}

/** contract.md#d19: a request that may send an email, committed before the answer, turned into a webhook by the worker. */
export interface EmailRequestsTable {
  id: string;
  tenant_id: string;
  kind: string;
  email: string;
  record_id: number | null;
  name: string | null;
  authentication_type: string | null;
  password_hash: string | null;
  password_salt: string | null;
  ip: string | null;
  user_agent: string | null;
  created_at: number;
}

/** Progressive password-login lockout, keyed by email so unknown emails behave like known ones. */
export interface LoginLockoutsTable {
  tenant_id: string;
  /** contract.md#d25: the keyed hash of the email (security/hashing.ts SubjectHasher), never the email. */
  subject: string;
  failures: number;
  level: number;
  locked_until: number;
  in_flight: number;
  in_flight_until: number;
  updated_at: number;
}

export interface RateLimitCountersTable {
  tenant_id: string;
  key: string;
  window_start: number;
  count: number;
  expires_at: number;
}

export interface RateLimitSetsTable {
  tenant_id: string;
  key: string;
  member: string;
  expires_at: number;
}

export interface WebhookDeliveriesTable {
  id: string;
  tenant_id: string;
  event_type: string;
  url: string;
  payload_enc: string | null;
  status: string;
  attempts: number;
  next_attempt_at: number;
  claimed_until: number;
  last_error: string | null;
  /** contract.md#d22: the member the event is about, so erasing a member drops what still waits for them; null when none. */
  member_id: number | null;
  created_at: number;
  updated_at: number;
}

export interface AuditEventsTable {
  id: Generated<number>;
  tenant_id: string;
  member_id: number | null;
  type: string;
  at: number;
  ip: string | null;
  user_agent: string | null;
  details: string | null;
}

export interface RecoveryCodesTable {
  tenant_id: string;
  member_id: number;
  code_hash: string;
}

export interface LoginOriginsTable {
  tenant_id: string;
  member_id: number;
  kind: string;
  value: string;
  first_seen: number;
  last_seen: number;
}

export interface Database {
  applications: ApplicationsTable;
  tenants: TenantsTable;
  members: MembersTable;
  sessions: SessionsTable;
  one_time_tokens: OneTimeTokensTable;
  registrations: RegistrationsTable;
  email_requests: EmailRequestsTable;
  login_lockouts: LoginLockoutsTable;
  rate_limit_counters: RateLimitCountersTable;
  rate_limit_sets: RateLimitSetsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  audit_events: AuditEventsTable;
  recovery_codes: RecoveryCodesTable;
  login_origins: LoginOriginsTable;
  passkeys: PasskeysTable;
  passkey_challenges: PasskeyChallengesTable;
  connections: ConnectionsTable;
  federated_identities: FederatedIdentitiesTable;
  federation_flows: FederationFlowsTable;
  federation_pending: FederationPendingTable;
  oauth_grants: OauthGrantsTable;
  oauth_artifacts: OauthArtifactsTable;
  oidc_signing_keys: OidcSigningKeysTable;
  oauth_clients: OauthClientsTable;
}

/** The tables whose rows belong to one tenant (they carry tenant_id). A new such table that is not listed fails to compile. */
type TenantOwnedTable = { [K in keyof Database]: Database[K] extends { tenant_id: string } ? K : never }[keyof Database];

/**
 * contract.md#d23: what erasing a tenant empties, in this order: members last, since their tenant_id is the
 * only foreign key to the tenant. The Record's keys are checked against the tables above.
 */
const TENANT_OWNED: Record<TenantOwnedTable, number> = {
  oauth_artifacts: -2,
  oauth_grants: -1,
  sessions: 1,
  one_time_tokens: 2,
  registrations: 3,
  email_requests: 4,
  login_lockouts: 5,
  rate_limit_counters: 6,
  rate_limit_sets: 7,
  webhook_deliveries: 8,
  audit_events: 9,
  recovery_codes: 10,
  login_origins: 11,
  passkeys: 12,
  passkey_challenges: 13,
  federation_flows: 14,
  federation_pending: 15,
  federated_identities: 16,
  connections: 17,
  oidc_signing_keys: 18,
  oauth_clients: 19,
  members: 20,
};
export const TENANT_OWNED_TABLES = (Object.keys(TENANT_OWNED) as TenantOwnedTable[]).sort((a, b) => TENANT_OWNED[a] - TENANT_OWNED[b]);

/** decisions.md#federated-sign-in: a tenant's upstream identity providers (migration 0017). */
export interface ConnectionsTable {
  tenant_id: string;
  /** The admin's slug, `[a-z0-9-]{1,32}`: in the start and callback URLs. */
  id: string;
  /** `oidc`, a preset that fills the issuer (`google`, `microsoft`, `apple`, `gitlab`), or `github`. */
  type: string;
  display_name: string;
  /** Null for `github` (OAuth 2 without discovery). */
  issuer: string | null;
  client_id: string;
  /** Sealed under SECRETS_KEY (security/secret-box.ts); never returned, never logged. */
  client_secret_enc: string;
  /** Space-separated. */
  scopes: string;
  allow_signup: number;
  /** JSON array of lowercase domains, or null for any. */
  email_domains: string | null;
  created_at: number;
  updated_at: number;
}

export interface FederatedIdentitiesTable {
  tenant_id: string;
  /** Ours, random: what the API names an identity by. */
  id: string;
  connection_id: string;
  /** The provider's `sub` (GitHub: the numeric user id). */
  subject: string;
  member_id: number;
  /** The email the provider gave when it was linked or last used; shown to the member only. */
  email: string | null;
  /** The member's `security_seq` when linked (decisions.md#federated-sign-in); null for a sign-up. */
  linked_seq: number | null;
  created_at: number;
  last_used_at: number | null;
}

export interface FederationFlowsTable {
  tenant_id: string;
  /** SHA-256 of the `latch_fed` cookie. */
  flow_hash: string;
  connection_id: string;
  /** `login` or `link` (a signed-in member adding an identity). */
  purpose: string;
  /** The member a `link` flow is for; 0 for `login`. */
  member_id: number;
  /** A `link` flow's session (SHA-256 of its cookie): the callback must come with it. Null for `login`. */
  session_hash: string | null;
  return_to: string | null;
  created_at: number;
  expires_at: number;
}

export interface FederationPendingTable {
  tenant_id: string;
  /** SHA-256 of the `__Host-latch_fed_pending` cookie. */
  pending_hash: string;
  /** `link` (prove the existing account, then link) or `second_factor`. */
  kind: string;
  connection_id: string;
  subject: string;
  email: string | null;
  member_id: number;
  return_to: string | null;
  created_at: number;
  expires_at: number;
}

/** decisions.md#openid-provider-storage (migration 0018): oidc-provider's Grant. */
export interface OauthGrantsTable {
  tenant_id: string;
  /** SHA-256 of the grant's id; the id itself is never stored. */
  id_hash: string;
  client_id: string;
  /** The provider's accountId (a member's recordId as a string). */
  account_id: string;
  member_id: number | null;
  /** The Latch session it was given under (null until bound: not findable then); its deletion cascades here. */
  session_id_hash: string | null;
  expires_at: number;
  /** JSON of the provider's payload without `jti`. */
  payload: string;
}

/** decisions.md#openid-provider-storage (migration 0018): every other oidc-provider model. */
export interface OauthArtifactsTable {
  tenant_id: string;
  model: string;
  /** SHA-256 of the id (codes and refresh tokens are bearer secrets). */
  id_hash: string;
  /** SHA-256 of the grant's id: deleting the grant cascades here. */
  grant_hash: string | null;
  uid: string | null;
  user_code_hash: string | null;
  expires_at: number;
  /** Set once by the one conditional update of `consume`. */
  consumed_at: number | null;
  payload: string;
}

/** decisions.md#openid-provider-signing-keys: a tenant's token signing keys (migration 0019). */
export interface OidcSigningKeysTable {
  tenant_id: string;
  /** The RFC 7638 thumbprint of the public JWK. */
  kid: string;
  /** `ES256` or `RS256`. */
  alg: string;
  /** The private JWK as JSON, sealed under SECRETS_KEY (security/secret-box.ts); never returned, never logged. */
  private_jwk_enc: string;
  /** The public JWK as JSON, as the JWKS publishes it. */
  public_jwk: string;
  created_at: number;
  /** Null while the key is current (signs); set when a rotation replaced it. */
  retired_at: number | null;
  /** When the last token a retired key signed has expired: it leaves the JWKS then. */
  expires_at: number | null;
}

/** decisions.md#openid-provider-clients: a tenant's OAuth clients (migration 0020). */
export interface OauthClientsTable {
  tenant_id: string;
  /** Random, public: the `client_id` of OAuth. */
  client_id: string;
  name: string;
  /** `confidential` (has a secret) or `public` (PKCE only). */
  type: string;
  /** 1: the tenant's own application, no consent page (decisions.md#openid-provider-clients). */
  first_party: number;
  /** JSON array of exact URIs. */
  redirect_uris: string;
  /** JSON array of exact URIs. */
  post_logout_redirect_uris: string;
  /** SHA-256 (hex) of the secret, shown once at creation; null for a public client. */
  secret_hash: string | null;
  created_at: number;
  updated_at: number;
}
