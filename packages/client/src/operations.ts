/**
 * Where each method goes: its operationId, HTTP method and path as in docs/openapi.json
 * (test/client-types.test.ts compares the two), but the browser navigations (the federated start,
 * whose URL `federatedStartUrl` builds, and the provider's callback). `admin` calls carry the tenant's API key,
 * `operator` calls the operator key.
 */
export interface Operation {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  admin?: true;
  operator?: true;
}

export const operations = {
  registerWithPassword: { method: "POST", path: "/auth/register-password" },
  registerWithMagicLink: { method: "POST", path: "/auth/register-magic-link" },
  verifyEmail: { method: "POST", path: "/auth/verify-email" },
  resendVerification: { method: "POST", path: "/auth/resend-verification" },
  loginWithPassword: { method: "POST", path: "/auth/login" },
  getSession: { method: "GET", path: "/auth/session" },
  logout: { method: "POST", path: "/auth/logout" },
  requestPasswordReset: { method: "POST", path: "/auth/forgot-password" },
  resetPassword: { method: "POST", path: "/auth/reset-password" },
  changePassword: { method: "POST", path: "/auth/change-password" },
  requestMagicLink: { method: "POST", path: "/auth/request-magic-link" },
  verifyMagicLink: { method: "POST", path: "/auth/verify-magic-link/{recordId}/{token}" },
  verifyLoginCode: { method: "POST", path: "/auth/verify-login-code" },
  setUpTwoFactor: { method: "POST", path: "/auth/2fa/setup" },
  enableTwoFactor: { method: "POST", path: "/auth/2fa/enable" },
  disableTwoFactor: { method: "POST", path: "/auth/2fa/disable" },
  regenerateRecoveryCodes: { method: "POST", path: "/auth/2fa/recovery-codes" },
  getBotChallenge: { method: "GET", path: "/auth/bot-challenge" },
  getMe: { method: "GET", path: "/auth/me" },
  updateMe: { method: "PATCH", path: "/auth/me" },
  changeEmail: { method: "POST", path: "/auth/change-email" },
  confirmEmailChange: { method: "POST", path: "/auth/confirm-email-change" },
  secureAccount: { method: "POST", path: "/auth/secure-account" },
  listSessions: { method: "GET", path: "/auth/sessions" },
  revokeSession: { method: "DELETE", path: "/auth/sessions/{id}" },
  revokeOtherSessions: { method: "POST", path: "/auth/sessions/revoke-others" },
  deleteAccount: { method: "POST", path: "/auth/delete-account" },
  startPasskeyRegistration: { method: "POST", path: "/auth/passkeys/register/options" },
  finishPasskeyRegistration: { method: "POST", path: "/auth/passkeys/register/verify" },
  listPasskeys: { method: "GET", path: "/auth/passkeys" },
  renamePasskey: { method: "PATCH", path: "/auth/passkeys/{id}" },
  deletePasskey: { method: "DELETE", path: "/auth/passkeys/{id}" },
  startPasskeyLogin: { method: "POST", path: "/auth/passkeys/login/options" },
  finishPasskeyLogin: { method: "POST", path: "/auth/passkeys/login/verify" },
  listSignInConnections: { method: "GET", path: "/auth/federated/connections" },
  listIdentities: { method: "GET", path: "/auth/identities" },
  startIdentityLink: { method: "POST", path: "/auth/identities/link/{connection}" },
  unlinkIdentity: { method: "DELETE", path: "/auth/identities/{id}" },
  finishFederatedSecondFactor: { method: "POST", path: "/auth/federated/second-factor" },
  confirmFederatedLink: { method: "POST", path: "/auth/federated/link" },
  lockAccount: { method: "POST", path: "/auth/lock-account", admin: true },
  resendVerificationAsAdmin: { method: "POST", path: "/auth/admin/resend-verification-email", admin: true },
  requirePasswordChange: { method: "POST", path: "/auth/admin/require-password-change", admin: true },
  listAuditEvents: { method: "GET", path: "/auth/admin/audit-log", admin: true },
  listMembers: { method: "GET", path: "/auth/admin/members", admin: true },
  getMember: { method: "GET", path: "/auth/admin/members/{recordId}", admin: true },
  exportMember: { method: "GET", path: "/auth/admin/members/{recordId}/export", admin: true },
  deleteMember: { method: "DELETE", path: "/auth/admin/members/{recordId}", admin: true },
  revokeMemberSessions: { method: "POST", path: "/auth/admin/revoke-sessions", admin: true },
  resetMemberTwoFactor: { method: "POST", path: "/auth/admin/members/{recordId}/reset-2fa", admin: true },
  createConnection: { method: "POST", path: "/auth/admin/connections", admin: true },
  listConnections: { method: "GET", path: "/auth/admin/connections", admin: true },
  updateConnection: { method: "PATCH", path: "/auth/admin/connections/{id}", admin: true },
  deleteConnection: { method: "DELETE", path: "/auth/admin/connections/{id}", admin: true },
  createTenant: { method: "POST", path: "/operator/tenants", operator: true },
  listTenants: { method: "GET", path: "/operator/tenants", operator: true },
  showTenant: { method: "GET", path: "/operator/tenants/{domain}", operator: true },
  updateTenantSettings: { method: "PATCH", path: "/operator/tenants/{domain}", operator: true },
  deleteTenant: { method: "DELETE", path: "/operator/tenants/{domain}", operator: true },
  rotateApplicationKey: { method: "POST", path: "/operator/applications/{applicationId}/rotate-key", operator: true },
  rotateWebhookSecret: { method: "POST", path: "/operator/tenants/{domain}/rotate-webhook-secret", operator: true },
  listWebhookDeliveries: { method: "GET", path: "/operator/tenants/{domain}/webhook-deliveries", operator: true },
} as const satisfies Record<string, Operation>;

export type OperationId = keyof typeof operations;
