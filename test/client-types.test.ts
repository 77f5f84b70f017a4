// SDK types compile against the routes (issue 7): the client's request and answer types equal the
// routes' TypeBox schemas, its error codes equal src/errors.ts, and it has a method, with the right
// method and path, for every member, admin and operator operation of docs/openapi.json (issue 29). The type half is
// checked by `npm run typecheck` (a mismatch is a compile error below); the rest runs as tests.
// The package ships tsc's declarations of these same sources (packages/client/dist/*.d.ts);
// test/client-package.test.ts type-checks a consumer outside the repository against them.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import type { Static, TSchema } from "typebox";
import {
  createLatchClient,
  LATCH_ERROR_CODES,
  operations,
  type AuditEventType as ClientAuditEventType,
  type LatchOperations,
  type LatchErrorCode,
  type MemberStatus as ClientMemberStatus,
} from "../packages/client/src/index.js";
import { OPENAPI_FILE } from "../scripts/openapi.js";
import { errorStatus, type ErrorCode } from "../src/errors.js";
import type { AuditEventType, MemberStatus } from "../src/model.js";
import type {
  AdminResendVerificationBody,
  AuditLogBody,
  AuditLogQuery,
  LockAccountBody,
  RequirePasswordChangeBody,
  StatusBody,
} from "../src/http/routes/admin.js";
import type {
  MemberBody,
  MemberExportBody,
  MemberListBody,
  MemberListQuery,
  MemberParams,
  RecordIdBody,
  RevokeSessionsBody,
  TwoFactorResetBody,
} from "../src/http/routes/members.js";
import type { ChallengeBody } from "../src/http/routes/bot-challenge.js";
import type { LoginAnswer, LoginBody, SessionAnswer } from "../src/http/routes/login.js";
import type { SessionTokenBody } from "../src/http/routes/session-token.js";
import type {
  MagicLoginAnswer,
  RegisterMagicLinkBody,
  RequestMagicLinkBody,
  VerifyLoginCodeBody,
  VerifyMagicLinkBody,
  VerifyMagicLinkParams,
} from "../src/http/routes/magic-link.js";
import type { ChangePasswordBody, ForgotPasswordBody, ResetPasswordBody } from "../src/http/routes/password.js";
import type { RegisterPasswordBody, RegistrationBody, ResendVerificationBody, VerifyEmailAnswer, VerifyEmailBody } from "../src/http/routes/registration.js";
import type {
  DisableTwoFactorBody,
  EnableTwoFactorBody,
  RecoveryCodesBody,
  RegenerateRecoveryCodesBody,
  SetupBody,
  SetUpTwoFactorBody,
} from "../src/http/routes/two-factor.js";
import type {
  ApplicationParams,
  CreatedTenantBody,
  CreateTenantBody,
  DeletedTenantBody,
  DeleteTenantQuery,
  DeliveriesBody,
  DeliveriesQuery,
  DomainParams,
  RotatedKeyBody,
  RotatedSecretBody,
  TenantBody,
  TenantListBody,
  TenantListQuery,
  UpdateTenantSettingsBody,
} from "../src/http/routes/operator.js";
import type {
  LoginOptionsBody,
  LoginVerifyBody,
  PasskeyBody,
  PasskeyListBody,
  PasskeyParams,
  RegistrationOptionsBody,
  RegistrationVerifyBody,
  RenamePasskeyBody,
} from "../src/http/routes/passkeys.js";
import type { ChangeEmailBody, DeleteAccountBody, LinkBody, MeBody, SessionListBody, SessionParams, UpdateMeBody } from "../src/http/routes/self-service.js";
import type { MessageBody } from "../src/http/schemas.js";
import type {
  ConnectionBody,
  ConnectionListBody,
  ConnectionParams,
  CreateConnectionBody,
  DeletedConnectionBody,
  UpdateConnectionBody,
} from "../src/http/routes/connections.js";
import type {
  CreatedOauthClientBody,
  CreateOauthClientBody,
  DeletedOauthClientBody,
  OauthClientBody,
  OauthClientListBody,
  OauthClientParams,
  UpdateOauthClientBody,
} from "../src/http/routes/oauth-clients.js";
import {
  ConnectionListBody as SignInConnectionListBody,
  FederatedLoginAnswer,
  IdentityListBody,
  LinkConfirmAnswer,
  LinkStartAnswer,
} from "../src/http/routes/federation.js";
import type { PasswordField, PublicIdField, SecondFactorCodeField } from "../src/http/schemas.js";

// ---- Type-level equality ----

/** Exact type identity (the compiler's own check): optional vs required, readonly, literal vs wide all differ. */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
/** A compile error unless T is `true`. */
function assertType<T extends true>(): T | void {}

type S<T extends TSchema> = Static<T>;
type Msg = S<typeof MessageBody>;
type VerifyParams = S<typeof VerifyMagicLinkParams>;
type Domain = S<typeof DomainParams>["domain"];

/** What each method must take (its parameter list) and resolve to, from the routes' schemas. */
interface RouteShapes {
  registerWithPassword: [[body: S<typeof RegisterPasswordBody>], S<typeof RegistrationBody>];
  registerWithMagicLink: [[body: S<typeof RegisterMagicLinkBody>], S<typeof RegistrationBody>];
  verifyEmail: [[body: S<typeof VerifyEmailBody>], S<typeof VerifyEmailAnswer>];
  resendVerification: [[body: S<typeof ResendVerificationBody>], Msg];
  loginWithPassword: [[body: S<typeof LoginBody>], S<typeof LoginAnswer>];
  getSession: [[], S<typeof SessionAnswer>];
  logout: [[], Msg];
  sessionToken: [[], S<typeof SessionTokenBody>];
  requestPasswordReset: [[body: S<typeof ForgotPasswordBody>], Msg];
  resetPassword: [[body: S<typeof ResetPasswordBody>], Msg];
  changePassword: [[body: S<typeof ChangePasswordBody>], Msg];
  requestMagicLink: [[body: S<typeof RequestMagicLinkBody>], Msg];
  verifyMagicLink: [[recordId: VerifyParams["recordId"], token: VerifyParams["token"], body?: S<typeof VerifyMagicLinkBody>], S<typeof MagicLoginAnswer>];
  verifyLoginCode: [[body: S<typeof VerifyLoginCodeBody>], S<typeof MagicLoginAnswer>];
  setUpTwoFactor: [[body?: NonNullable<S<typeof SetUpTwoFactorBody>>], S<typeof SetupBody>];
  enableTwoFactor: [[body: S<typeof EnableTwoFactorBody>], S<typeof RecoveryCodesBody>];
  disableTwoFactor: [[body: S<typeof DisableTwoFactorBody>], Msg];
  regenerateRecoveryCodes: [[body: S<typeof RegenerateRecoveryCodesBody>], S<typeof RecoveryCodesBody>];
  getBotChallenge: [[], S<typeof ChallengeBody>];
  getMe: [[], S<typeof MeBody>];
  updateMe: [[body: S<typeof UpdateMeBody>], S<typeof MeBody>];
  changeEmail: [[body: S<typeof ChangeEmailBody>], Msg];
  confirmEmailChange: [[body: S<typeof LinkBody>], Msg];
  secureAccount: [[body: S<typeof LinkBody>], Msg];
  listSessions: [[], S<typeof SessionListBody>];
  revokeSession: [[id: S<typeof SessionParams>["id"]], Msg];
  revokeOtherSessions: [[], Msg];
  deleteAccount: [[body: S<typeof DeleteAccountBody>], Msg];
  startPasskeyRegistration: [[body?: S<typeof RegistrationOptionsBody>], Record<string, unknown>];
  finishPasskeyRegistration: [[body: S<typeof RegistrationVerifyBody>], S<typeof PasskeyBody>];
  listPasskeys: [[], S<typeof PasskeyListBody>];
  renamePasskey: [[id: S<typeof PasskeyParams>["id"], body: S<typeof RenamePasskeyBody>], S<typeof PasskeyBody>];
  deletePasskey: [[id: S<typeof PasskeyParams>["id"]], Msg];
  startPasskeyLogin: [[body?: S<typeof LoginOptionsBody>], Record<string, unknown>];
  finishPasskeyLogin: [[body: S<typeof LoginVerifyBody>], S<typeof LoginAnswer>];
  createTenant: [[body: S<typeof CreateTenantBody>], S<typeof CreatedTenantBody>];
  listTenants: [[query?: S<typeof TenantListQuery>], S<typeof TenantListBody>];
  showTenant: [[domain: Domain], S<typeof TenantBody>];
  updateTenantSettings: [[domain: Domain, body: S<typeof UpdateTenantSettingsBody>], S<typeof TenantBody>];
  deleteTenant: [[domain: Domain, confirm: S<typeof DeleteTenantQuery>["confirm"]], S<typeof DeletedTenantBody>];
  rotateApplicationKey: [[applicationId: S<typeof ApplicationParams>["applicationId"]], S<typeof RotatedKeyBody>];
  rotateWebhookSecret: [[domain: Domain], S<typeof RotatedSecretBody>];
  listWebhookDeliveries: [[domain: Domain, query?: S<typeof DeliveriesQuery>], S<typeof DeliveriesBody>];
  lockAccount: [[body: S<typeof LockAccountBody>], S<typeof StatusBody>];
  resendVerificationAsAdmin: [[body: S<typeof AdminResendVerificationBody>], Msg];
  requirePasswordChange: [[body: S<typeof RequirePasswordChangeBody>], S<typeof StatusBody>];
  listAuditEvents: [[query: S<typeof AuditLogQuery>], S<typeof AuditLogBody>];
  listMembers: [[query?: S<typeof MemberListQuery>], S<typeof MemberListBody>];
  getMember: [[recordId: S<typeof MemberParams>["recordId"]], S<typeof MemberBody>];
  exportMember: [[recordId: S<typeof MemberParams>["recordId"]], S<typeof MemberExportBody>];
  deleteMember: [[recordId: S<typeof MemberParams>["recordId"]], S<typeof RecordIdBody>];
  revokeMemberSessions: [[body: S<typeof RevokeSessionsBody>], S<typeof RecordIdBody>];
  resetMemberTwoFactor: [[recordId: S<typeof MemberParams>["recordId"]], S<typeof TwoFactorResetBody>];
  createConnection: [[body: S<typeof CreateConnectionBody>], S<typeof ConnectionBody>];
  listConnections: [[], S<typeof ConnectionListBody>];
  updateConnection: [[id: S<typeof ConnectionParams>["id"], body: S<typeof UpdateConnectionBody>], S<typeof ConnectionBody>];
  deleteConnection: [[id: S<typeof ConnectionParams>["id"]], S<typeof DeletedConnectionBody>];
  createOauthClient: [[body: S<typeof CreateOauthClientBody>], S<typeof CreatedOauthClientBody>];
  listOauthClients: [[], S<typeof OauthClientListBody>];
  getOauthClient: [[clientId: S<typeof OauthClientParams>["clientId"]], S<typeof OauthClientBody>];
  updateOauthClient: [[clientId: S<typeof OauthClientParams>["clientId"], body: S<typeof UpdateOauthClientBody>], S<typeof OauthClientBody>];
  deleteOauthClient: [[clientId: S<typeof OauthClientParams>["clientId"]], S<typeof DeletedOauthClientBody>];
  // src/http/routes/federation.ts declares its bodies inline: rebuilt here from the same fields.
  listSignInConnections: [[], S<typeof SignInConnectionListBody>];
  listIdentities: [[], S<typeof IdentityListBody>];
  startIdentityLink: [
    [connection: string, body: { password?: S<typeof PasswordField>; twoFACode?: S<typeof SecondFactorCodeField>; returnTo?: string }],
    S<typeof LinkStartAnswer>,
  ];
  unlinkIdentity: [[id: S<typeof PublicIdField>, body?: FederationReauthentication], Msg];
  finishFederatedSecondFactor: [[body: { twoFACode: S<typeof SecondFactorCodeField> }], S<typeof FederatedLoginAnswer>];
  confirmFederatedLink: [[], S<typeof LinkConfirmAnswer>];
}
type FederationReauthentication = { password?: S<typeof PasswordField>; twoFACode?: S<typeof SecondFactorCodeField> };

/** Per method: [parameters equal, answer equal]. Indexing RouteShapes by every client method makes a method without a row a compile error. */
export type Verdicts = {
  [K in keyof LatchOperations]: [Equal<Parameters<LatchOperations[K]>, RouteShapes[K][0]>, Equal<Awaited<ReturnType<LatchOperations[K]>>, RouteShapes[K][1]>];
};
type AllTrue = { [K in keyof LatchOperations]: [true, true] };

assertType<Equal<Verdicts, AllTrue>>();
// And no row for a method the client no longer has.
assertType<Equal<keyof RouteShapes, keyof LatchOperations>>();
// The SDK's codes are the service's codes plus its own network_error, no more and no fewer.
assertType<Equal<LatchErrorCode, ErrorCode | "network_error">>();
// The unions the SDK copies from src/model.ts (it can't import the service), by name as well as
// inside the answers above.
assertType<Equal<ClientAuditEventType, AuditEventType>>();
assertType<Equal<ClientMemberStatus, MemberStatus>>();

// ---- Runtime checks against the committed OpenAPI document ----

type Json = Record<string, unknown>;

/**
 * The operations the SDK leaves out: the probes and the scrape (`health`), which a load balancer and
 * Prometheus call, not an application. Everything else in the document needs a method.
 */
const NOT_FOR_THE_SDK_TAGS = ["health"];
/** The client's members that are not operations. */
const CLIENT_HELPERS = ["setCookies", "withRequest", "federatedStartUrl"];
/**
 * Operations a browser navigates to, never called with fetch (the answer is a redirect with a
 * cookie bound to that browser): the start has `federatedStartUrl`, the callbacks (GET, and the form post) are the provider's.
 */
const BROWSER_NAVIGATIONS = ["startFederatedSignIn", "federatedCallback", "federatedFormPostCallback"];

/** Every operation of the document but the health ones: operationId -> "METHOD path". */
function documentedOperations(): Map<string, string> {
  const document = JSON.parse(readFileSync(OPENAPI_FILE, "utf8")) as { paths: Record<string, Record<string, Json>> };
  const found = new Map<string, string>();
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      const tags = (operation.tags ?? []) as string[];
      if (method === "parameters" || tags.some((tag) => NOT_FOR_THE_SDK_TAGS.includes(tag))) continue;
      if (BROWSER_NAVIGATIONS.includes(operation.operationId as string)) continue;
      assert.equal(typeof operation.operationId, "string", `${method.toUpperCase()} ${path} has no operationId, so no SDK method can be named after it`);
      found.set(operation.operationId as string, `${method.toUpperCase()} ${path}`);
    }
  }
  return found;
}

test("the client has a method for every member, admin and operator operation, with its method and path", () => {
  const documented = documentedOperations();
  assert.ok(documented.size >= 52, `only ${documented.size} operations found in the document`);
  assert.ok(documented.has("createTenant") && documented.has("rotateWebhookSecret") && documented.has("listWebhookDeliveries"), "the operator API is counted");
  const client = createLatchClient() as unknown as Record<string, unknown>;
  for (const id of documented.keys()) assert.equal(typeof client[id], "function", `no client method for operation ${id}`);
  const routed = new Map(Object.entries(operations).map(([id, op]) => [id, `${op.method} ${op.path}`]));
  assert.deepStrictEqual(routed, documented, "packages/client/src/operations.ts differs from docs/openapi.json");
  const methods = Object.keys(client).filter((name) => !CLIENT_HELPERS.includes(name));
  assert.deepStrictEqual(methods.sort(), [...documented.keys()].sort(), "client methods without an operation");
});

test("exactly the admin-tagged operations carry the API key, and the operator calls the operator key", () => {
  const document = JSON.parse(readFileSync(OPENAPI_FILE, "utf8")) as { paths: Record<string, Record<string, Json>> };
  const adminIds = Object.values(document.paths)
    .flatMap((item) => Object.values(item))
    .filter((op) => ((op.tags ?? []) as string[]).includes("admin"))
    .map((op) => op.operationId as string)
    .sort();
  const keyed = Object.entries(operations)
    .filter(([, op]) => "admin" in op)
    .map(([id]) => id)
    .sort();
  assert.deepStrictEqual(keyed, adminIds);
  const operatorKeyed = Object.entries(operations)
    .filter(([, op]) => "operator" in op)
    .map(([id]) => id)
    .sort();
  const operatorIds = Object.values(document.paths)
    .flatMap((item) => Object.values(item))
    .filter((op) => ((op.tags ?? []) as string[]).includes("operator"))
    .map((op) => op.operationId as string)
    .sort();
  assert.deepStrictEqual(operatorKeyed, operatorIds);
});

test("the navigations the SDK does not call are in the document, and federatedStartUrl builds the start's URL", () => {
  const document = JSON.parse(readFileSync(OPENAPI_FILE, "utf8")) as { paths: Record<string, Record<string, Json>> };
  const ids = Object.values(document.paths).flatMap((item) => Object.values(item).map((op) => op.operationId));
  for (const id of BROWSER_NAVIGATIONS) assert.ok(ids.includes(id), `${id} is no longer in the document: drop it from BROWSER_NAVIGATIONS`);
  assert.ok(document.paths["/auth/federated/{connection}/start"]?.get, "the start's path");
  assert.equal(createLatchClient().federatedStartUrl("google"), "/auth/federated/google/start");
  const remote = createLatchClient({ baseUrl: "https://auth.example.com/" });
  assert.equal(remote.federatedStartUrl("dev", "/account?tab=2"), "https://auth.example.com/auth/federated/dev/start?returnTo=%2Faccount%3Ftab%3D2");
  assert.equal(remote.federatedStartUrl("a/../b"), "https://auth.example.com/auth/federated/a%2F..%2Fb/start", "a connection can't change the path");
});

test("the client's error codes are the service's codes plus network_error", () => {
  assert.deepStrictEqual([...LATCH_ERROR_CODES].sort(), [...Object.keys(errorStatus), "network_error"].sort());
});
