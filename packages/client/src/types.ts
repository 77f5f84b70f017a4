/**
 * The API's request and answer bodies, written out by hand because the SDK can't depend on the
 * service's TypeBox schemas. test/client-types.test.ts proves each one equal to its route's
 * schema, so a change on either side fails `npm run typecheck`.
 */
import type { ForwardOptions, IncomingRequestLike, WithRequestOptions } from "./forward.js";
import type { LatchConnectionCalls } from "./connection-types.js";
import type { LatchOauthClientCalls } from "./oauth-client-types.js";
import type { LatchFederationCalls } from "./federation-types.js";
import type { LatchOperatorCalls } from "./operator-types.js";

// ---- Requests ----
// "bot-challenge-response": the bot widget's solution (Turnstile, hCaptcha, reCAPTCHA or ALTCHA),
// for tenants that check one. Flat object types, not intersections, so editors show them whole.

export type RegisterWithPasswordRequest = { email: string; name: string; password: string; "bot-challenge-response"?: string };
export type RegisterWithMagicLinkRequest = { email: string; name: string; "bot-challenge-response"?: string };
/** `recordId` and `token` are the last two segments of the emailed link. */
/** `password` only with a link that carries none (a resend, or an email-only registration). */
export type VerifyEmailRequest = { recordId: string; token: string; password?: string };
export type ResendVerificationRequest = { email: string; "bot-challenge-response"?: string };
/** Send it again with `twoFACode` (TOTP or recovery code) when the answer says `two_factor_required`. */
export type LoginWithPasswordRequest = { email: string; password: string; twoFACode?: string; "bot-challenge-response"?: string };
export type RequestPasswordResetRequest = { email: string; "bot-challenge-response"?: string };
export type ResetPasswordRequest = { recordId: string; token: string; newPassword: string };
export type ChangePasswordRequest = { currentPassword: string; newPassword: string };
export type RequestMagicLinkRequest = { email: string; "bot-challenge-response"?: string };
export type VerifyMagicLinkRequest = { twoFACode?: string; "bot-challenge-response"?: string };
/** contract.md#d26: the `code` of the latest `magic_login` webhook for the email. */
export type VerifyLoginCodeRequest = { email: string; code: string; twoFACode?: string; "bot-challenge-response"?: string };
/** contract.md#d30: turning 2FA on re-authenticates: `password` at setup, or here (a member without a password: a session under 10 minutes old). */
export type SetUpTwoFactorRequest = { password?: string };
/** `password` unless this session gave it at setup. */
export type EnableTwoFactorRequest = { code: string; password?: string };
/** The password or a current code (TOTP or recovery), at least one; the password wins when both come. */
export type DisableTwoFactorRequest = { password: string; code?: string } | { password?: string; code: string };
export type RegenerateRecoveryCodesRequest = { code: string };
export type LockAccountRequest = { recordId: string; action: "lock" | "unlock"; email?: string };
export type ResendVerificationAsAdminRequest = { recordId: string; email: string };
export type RequirePasswordChangeRequest = { recordId: string };
/** `limit` an integer 0–999, kept within 1–200 (default 50); the client sends it in the query string. */
export type ListAuditEventsQuery = { recordId: string; limit?: number };
export type MemberStatus = "Email Verification Pending" | "Unlocked" | "Locked" | "Password Change Pending";
/** `email` exact, or a prefix ending in `*`; `limit` an integer 0–999, kept within 1–100 (default 50); `cursor` the previous page's `nextCursor`. */
export type ListMembersQuery = { email?: string; status?: MemberStatus; limit?: number; cursor?: string };
export type RevokeMemberSessionsRequest = { recordId: string };
/** contract.md#d29: one member of `importMembers`, as the system it leaves knew it. */
export type ImportedMember = {
  email: string;
  name?: string;
  emailVerified: boolean;
  /** Argon2 (PHC), bcrypt, scrypt (PHC), `firebase-scrypt$<salt>$<hash>`, Django `pbkdf2_sha256$…` or ASP.NET Identity v3. */
  passwordHash?: string;
  /** ISO 8601 or Unix milliseconds. */
  createdAt?: string | number;
  externalId?: string;
  /** Base32: the member is imported with 2FA on. */
  totpSecret?: string;
};
export type ImportMembersRequest = {
  members: ImportedMember[];
  /** The Firebase project's hash parameters, for `firebase-scrypt$` hashes. */
  firebaseScrypt?: { signerKey: string; saltSeparator: string; rounds: number; memCost: number };
};
export type ImportMembersQuery = { dryRun?: boolean };
export type ImportFormat = "argon2" | "bcrypt" | "scrypt" | "firebaseScrypt" | "pbkdf2Django" | "pbkdf2AspNet" | "none";
/** Why a member was refused (the service's docs/import.md). */
export type ImportRefusalReason =
  | "not_an_object"
  | "invalid_email"
  | "invalid_name"
  | "invalid_email_verified"
  | "invalid_password_hash"
  | "invalid_created_at"
  | "invalid_external_id"
  | "invalid_totp_secret"
  | "unknown_hash_format"
  | "malformed_hash"
  | "hash_cost_too_high"
  | "firebase_params_missing";
/** contract.md#d29's answer: `refused[].index` is the member's position in `members`, from 0. */
export type ImportMembersResponse = {
  success: true;
  dryRun: boolean;
  imported: number;
  skipped: number;
  refused: { index: number; reason: ImportRefusalReason }[];
  formats: Record<ImportFormat, number>;
};
/** contract.md#d30: `resetMemberTwoFactor`'s answer. */
export type TwoFactorResetResponse = { success: true; recordid: string; _2fa_status: "Disabled" | "Enabled" };
export type UpdateMeRequest = { name: string };
/** contract.md#d24 re-authentication: `password` when the member has one, `twoFACode` when 2FA is on; neither for a magic-link-only member with a session under 10 minutes old. */
export type ChangeEmailRequest = { newEmail: string; password?: string; twoFACode?: string };
export type DeleteAccountRequest = { password?: string; twoFACode?: string };
/** contract.md#d26: re-authentication, needed only when the session is over 10 minutes old. */
export type PasskeyRegistrationOptionsRequest = { password?: string; twoFACode?: string };
/** WebAuthn options JSON: pass it on as it is, e.g. `startRegistration({ optionsJSON })` of `@simplewebauthn/browser`. */
export type PasskeyOptionsResponse = Record<string, unknown>;
type Base64Url = string;
type Attachment = "platform" | "cross-platform";
/** What `startRegistration` of `@simplewebauthn/browser` resolves to (`RegistrationResponseJSON`). */
export type PasskeyRegistrationResponse = {
  id: Base64Url;
  rawId: Base64Url;
  type: "public-key";
  authenticatorAttachment?: Attachment;
  clientExtensionResults: object;
  response: {
    clientDataJSON: Base64Url;
    attestationObject: Base64Url;
    authenticatorData?: Base64Url;
    transports?: string[];
    publicKeyAlgorithm?: number;
    publicKey?: Base64Url;
  };
};
/** What `startAuthentication` of `@simplewebauthn/browser` resolves to (`AuthenticationResponseJSON`). */
export type PasskeyAuthenticationResponse = {
  id: Base64Url;
  rawId: Base64Url;
  type: "public-key";
  authenticatorAttachment?: Attachment;
  clientExtensionResults: object;
  response: { clientDataJSON: Base64Url; authenticatorData: Base64Url; signature: Base64Url; userHandle?: Base64Url };
};
export type FinishPasskeyRegistrationRequest = { response: PasskeyRegistrationResponse; name?: string };
export type RenamePasskeyRequest = { name: string };
export type StartPasskeyLoginRequest = { "bot-challenge-response"?: string };
export type FinishPasskeyLoginRequest = { response: PasskeyAuthenticationResponse };
/** `recordId` and `token` are the last two segments of the emailed link. */
export type LinkRequest = { recordId: string; token: string };
/** contract.md#d23. `limit` an integer 0–999, kept within 1–200 (default 50); `cursor` the previous page's `nextCursor`. */
export type ListTenantsQuery = { limit?: number; cursor?: string };

// ---- Answers (2xx bodies) ----

export type MessageResponse = { success: true; message: string };
/** `passwordSet`: whether the verified account now has a password (contract.md#d18). */
export type VerifyEmailResponse = { success: true; message: string; passwordSet: boolean };
/** An already-registered email gets the same answer with a decoy `recordid`. */
export type RegistrationResponse = { success: true; recordid: string; message: string };
export type LoginResponse = { authorized: true; recordid: string; redirectUrl: string } | { authorized: false; two_factor_required: true; message: string };
/** `iat` and `exp` are Unix seconds. */
export type SessionResponse = {
  recordId: string;
  hostname: string;
  iat: number;
  exp: number;
  is2FAEnabled: boolean;
  require2FASetup: boolean;
  passwordChangePending: boolean;
  loginContext: null;
  attemptedPath: null;
};
/**
 * A 5-minute JWT of the session for a backend that verifies it with the tenant's JWKS (`/oauth/jwks`):
 * check the signature, `iss` (`https://{hostname}`), `aud` (the hostname), `typ` (`latch-session+jwt`) and `exp`.
 * `expiresAt` is the token's `exp`, ISO 8601.
 */
export type SessionTokenResponse = { success: true; token: string; expiresAt: string };
export type MagicLinkLoginResponse = { success: true; message: string; redirect: string } | { success: false; requires2FA: true; message: string };
export type TwoFactorSetupResponse = { success: true; secret: string; otpauthUrl: string; qrCodeDataUrl: string };
export type RecoveryCodesResponse = { success: true; recoveryCodes: string[] };
/**
 * altcha-lib's v2 challenge, HMAC-signed, valid for 10 minutes: hand the whole object to the ALTCHA
 * widget as it came. altcha-lib may add fields; the signature covers them, so don't rebuild it.
 */
export type BotChallengeResponse = {
  parameters: {
    /** `PBKDF2/SHA-256` (or `SHA-256`). */
    algorithm: string;
    /** Iterations of the key derivation. */
    cost: number;
    /** Signed with the parameters: `exp` in Unix milliseconds, `tenant` the tenant's id. */
    data?: { exp: number; tenant: string };
    expiresAt?: number;
    keyLength: number;
    /** Hex: the derived key the widget searches for starts with it. */
    keyPrefix: string;
    keySignature?: string;
    memoryCost?: number;
    nonce: string;
    parallelism?: number;
    salt: string;
  };
  /** HMAC-SHA-256 of the parameters, hex. */
  signature?: string;
};
export type AccountStatusResponse = { success: true; recordid: string; authentication_status: MemberStatus };
/**
 * What an audit event records: the service's AUDIT_EVENT_TYPES, copied here because the SDK can't
 * import the service (test/client-types.test.ts proves the two equal). What each means: the
 * service's docs/audit-events.md. Later versions may add types.
 */
export type AuditEventType =
  | "registered"
  | "member_imported"
  | "registration_repeated"
  | "verification_resent"
  | "email_verified"
  | "login_succeeded"
  | "login_failed"
  | "login_anomaly"
  | "suspicious_login_velocity"
  | "logout"
  | "two_factor_setup_started"
  | "two_factor_enabled"
  | "two_factor_disabled"
  | "two_factor_passed"
  | "two_factor_failed"
  | "recovery_code_used"
  | "recovery_codes_regenerated"
  | "password_reset_requested"
  | "password_reset"
  | "password_changed"
  | "password_change_failed"
  | "password_change_required"
  | "magic_link_requested"
  | "account_locked"
  | "account_unlocked"
  | "connection_created"
  | "connection_updated"
  | "connection_deleted"
  | "oauth_client_created"
  | "oauth_client_updated"
  | "oauth_client_deleted"
  | "name_changed"
  | "email_change_requested"
  | "email_changed"
  | "email_restored"
  | "account_secured"
  | "session_revoked"
  | "sessions_revoked"
  | "member_deleted"
  | "passkey_added"
  | "passkey_removed"
  | "identity_linked"
  | "identity_unlinked"
  | "federated_login"
  | "passkey_counter_regressed";
export type AuditEvent = {
  id: number;
  type: AuditEventType;
  /** ISO 8601. */
  at: string;
  ip: string | null;
  userAgent: string | null;
  details?: { [key: string]: string | number | boolean | null };
};
export type AuditLogResponse = { success: true; recordid: string; events: AuditEvent[] };
/** contract.md#d22. Times are ISO 8601. */
export type Member = {
  recordid: string;
  email: string;
  name: string;
  authentication_status: MemberStatus;
  authentication_type: ("Password" | "Magic Link" | "Federated")[];
  _2fa_status: "Disabled" | "Enabled";
  createdAt: string;
  lastLoginAt: string | null;
  /** The member's id in the system they were imported from (`externalId` of the import); null otherwise. */
  externalId: string | null;
};
/** Flat, so editors show every field. */
type With<T, U> = { [K in keyof T | keyof U]: K extends keyof U ? U[K] : K extends keyof T ? T[K] : never };
export type MemberListResponse = { success: true; members: Member[]; nextCursor: string | null };
/** `passkeys`: how many; `sessions`: how many live. */
export type MemberResponse = With<Member, { success: true; passkeys: number; sessions: number }>;
/** contract.md#d24: a session as its member sees it. Times are ISO 8601; `lastSeenAt` moves at most once a minute. */
export type SessionSummary = { createdAt: string; lastSeenAt: string; expiresAt: string; ip: string | null; userAgent: string | null; country: string | null };
export type MemberExportResponse = {
  success: true;
  member: With<Member, { emailVerified: boolean; hasPassword: boolean }>;
  sessions: SessionSummary[];
  loginHistory: { kind: "country" | "network"; value: string; firstSeenAt: string; lastSeenAt: string }[];
  auditEvents: {
    type: AuditEventType;
    at: string;
    ip: string | null;
    userAgent: string | null;
    details: { [key: string]: string | number | boolean | null };
  }[];
  passkeys: { name: string; createdAt: string; lastUsedAt: string | null }[];
};
export type RecordIdResponse = { success: true; recordid: string };
/** contract.md#d24: the signed-in member; `hasPassword` false for a magic-link-only member. */
export type MeResponse = With<Omit<Member, "lastLoginAt" | "externalId">, { success: true; hasPassword: boolean }>;
/** contract.md#d23. Times are ISO 8601; never a key or secret. */
export type TenantListResponse = { tenants: { domain: string; applicationId: string; createdAt: string }[]; nextCursor: string | null };
/** `applicationDeleted`: the application (and its API key) went with its last tenant. */
export type DeletedTenantResponse = { success: true; domain: string; applicationId: string; applicationDeleted: boolean };
/** `id` names the session in revokeSession; it is not the cookie. */
export type SessionListResponse = { success: true; sessions: With<SessionSummary, { id: string; current: boolean }>[] };
/** contract.md#d26. `id` is ours (for rename and delete), not the credential id; `backedUp`: synced to the member's other devices. */
export type Passkey = { id: string; name: string; createdAt: string; lastUsedAt: string | null; backedUp: boolean };
export type PasskeyResponse = { success: true; passkey: Passkey };
export type PasskeyListResponse = { success: true; passkeys: Passkey[] };

// ---- The client ----

export interface LatchClientOptions {
  /** Default "" = same origin (browser). In Node: "https://auth.example.com". */
  baseUrl?: string;
  /** Sent as X-Tenant-Domain; without it the service uses the Host header. */
  tenantDomain?: string;
  /** Default globalThis.fetch. */
  fetch?: typeof fetch;
  /**
   * "browser" (default): the browser keeps the session cookie; requests go with credentials: "same-origin".
   * "memory": for Node, the client keeps `session_id` from Set-Cookie and sends it back itself.
   */
  cookies?: "browser" | "memory";
  /**
   * Browser mode: fetch's `credentials`, "same-origin" by default. "include" for a page on another
   * origin that the tenant lists in `allowedOrigins` (Latch grants it CORS); the session cookie is
   * `SameSite=Lax`, so that works only between origins of the same site.
   */
  credentials?: RequestInit["credentials"];
  /** The tenant's internal API key, sent as `Authorization: Bearer` on the admin calls only. Server side only. */
  apiKey?: string;
  /** OPERATOR_API_KEY, sent on the operator calls only (`LatchOperatorCalls`). The operator's own tooling only. */
  operatorKey?: string;
  /**
   * Server code calling on behalf of a browser: its session cookie, User-Agent and (only if given)
   * IP. The client then keeps the session as "memory" mode does, starting from the browser's, and
   * `setCookies()` gives what to send back to the browser. `withRequest(request)` fills this in.
   */
  forward?: ForwardOptions;
}

/** One method per endpoint, named by its OpenAPI operationId; each rejects with LatchError. */
export interface LatchOperations extends LatchOperatorCalls, LatchConnectionCalls, LatchOauthClientCalls, LatchFederationCalls {
  registerWithPassword(body: RegisterWithPasswordRequest): Promise<RegistrationResponse>;
  registerWithMagicLink(body: RegisterWithMagicLinkRequest): Promise<RegistrationResponse>;
  verifyEmail(body: VerifyEmailRequest): Promise<VerifyEmailResponse>;
  resendVerification(body: ResendVerificationRequest): Promise<MessageResponse>;
  loginWithPassword(body: LoginWithPasswordRequest): Promise<LoginResponse>;
  getSession(): Promise<SessionResponse>;
  logout(): Promise<MessageResponse>;
  sessionToken(): Promise<SessionTokenResponse>;
  requestPasswordReset(body: RequestPasswordResetRequest): Promise<MessageResponse>;
  resetPassword(body: ResetPasswordRequest): Promise<MessageResponse>;
  changePassword(body: ChangePasswordRequest): Promise<MessageResponse>;
  requestMagicLink(body: RequestMagicLinkRequest): Promise<MessageResponse>;
  verifyMagicLink(recordId: string, token: string, body?: VerifyMagicLinkRequest): Promise<MagicLinkLoginResponse>;
  verifyLoginCode(body: VerifyLoginCodeRequest): Promise<MagicLinkLoginResponse>;
  setUpTwoFactor(body?: SetUpTwoFactorRequest): Promise<TwoFactorSetupResponse>;
  enableTwoFactor(body: EnableTwoFactorRequest): Promise<RecoveryCodesResponse>;
  disableTwoFactor(body: DisableTwoFactorRequest): Promise<MessageResponse>;
  regenerateRecoveryCodes(body: RegenerateRecoveryCodesRequest): Promise<RecoveryCodesResponse>;
  getBotChallenge(): Promise<BotChallengeResponse>;
  getMe(): Promise<MeResponse>;
  updateMe(body: UpdateMeRequest): Promise<MeResponse>;
  changeEmail(body: ChangeEmailRequest): Promise<MessageResponse>;
  confirmEmailChange(body: LinkRequest): Promise<MessageResponse>;
  secureAccount(body: LinkRequest): Promise<MessageResponse>;
  listSessions(): Promise<SessionListResponse>;
  revokeSession(id: string): Promise<MessageResponse>;
  revokeOtherSessions(): Promise<MessageResponse>;
  deleteAccount(body: DeleteAccountRequest): Promise<MessageResponse>;
  startPasskeyRegistration(body?: PasskeyRegistrationOptionsRequest): Promise<PasskeyOptionsResponse>;
  finishPasskeyRegistration(body: FinishPasskeyRegistrationRequest): Promise<PasskeyResponse>;
  listPasskeys(): Promise<PasskeyListResponse>;
  renamePasskey(id: string, body: RenamePasskeyRequest): Promise<PasskeyResponse>;
  deletePasskey(id: string): Promise<MessageResponse>;
  startPasskeyLogin(body?: StartPasskeyLoginRequest): Promise<PasskeyOptionsResponse>;
  finishPasskeyLogin(body: FinishPasskeyLoginRequest): Promise<LoginResponse>;
  lockAccount(body: LockAccountRequest): Promise<AccountStatusResponse>;
  resendVerificationAsAdmin(body: ResendVerificationAsAdminRequest): Promise<MessageResponse>;
  requirePasswordChange(body: RequirePasswordChangeRequest): Promise<AccountStatusResponse>;
  listAuditEvents(query: ListAuditEventsQuery): Promise<AuditLogResponse>;
  listMembers(query?: ListMembersQuery): Promise<MemberListResponse>;
  getMember(recordId: string): Promise<MemberResponse>;
  exportMember(recordId: string): Promise<MemberExportResponse>;
  deleteMember(recordId: string): Promise<RecordIdResponse>;
  revokeMemberSessions(body: RevokeMemberSessionsRequest): Promise<RecordIdResponse>;
  /** contract.md#d30: turns the member's 2FA off for support, ends their sessions and alerts them. */
  resetMemberTwoFactor(recordId: string): Promise<TwoFactorResetResponse>;
  /** contract.md#d29: imports up to 1,000 members with their old password hashes; `{ dryRun: true }` writes nothing. */
  importMembers(body: ImportMembersRequest, query?: ImportMembersQuery): Promise<ImportMembersResponse>;
}

export interface LatchClient extends LatchOperations {
  /**
   * A client for one incoming request of a browser: the same settings, with the request's
   * `session_id` cookie and User-Agent forwarded (and `clientIp` when given, see ForwardOptions).
   * Make one per request: it keeps that browser's session, as "memory" mode does.
   */
  withRequest(request: IncomingRequestLike, options?: WithRequestOptions): LatchClient;
  /**
   * The URL of `GET /auth/federated/{connection}/start` on `baseUrl`, with `returnTo` (a path on the
   * tenant's site) when given: a "Continue with …" link's href, or where server code redirects the
   * browser. No request is made: the start is the browser's own navigation.
   */
  federatedStartUrl(connection: string, returnTo?: string): string;
  /**
   * The `Set-Cookie` lines of this client's answers so far, in order, as Latch sent them: hand them to
   * the browser (`res.setHeader("set-cookie", client.setCookies())`) after a login, or a logout that
   * clears the cookie. Always empty in "browser" mode, where fetch hides Set-Cookie.
   */
  setCookies(): string[];
}
