/** createLatchClient: one typed method per endpoint over fetch, in the browser and in Node 20. */
import { createSessionCookieJar, type SessionCookieJar } from "./cookies.js";
import { errorFromResponse, LatchError, networkError } from "./errors.js";
import { assertClientIp, forwardedCookies, forwardOfRequest } from "./forward.js";
import { operations, type OperationId } from "./operations.js";
import type { LatchClient, LatchClientOptions, LatchOperations } from "./types.js";

interface CallInput {
  body?: object;
  query?: Record<string, string | number | undefined>;
  pathParams?: Record<string, string>;
}

type Call = <T>(id: OperationId, input?: CallInput) => Promise<T>;

interface Transport {
  call: Call;
  /** The Set-Cookie lines of the answers so far. */
  setCookies(): string[];
}

/** The path with its `{name}` segments filled in, each encoded, so a param can't change the path. */
function fillPath(template: string, params: Record<string, string> = {}): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name] ?? ""));
}

/** The query as text: a number (`limit`) goes as its digits, which the route's schema reads back as a number. */
function queryString(query: Record<string, string | number | undefined> = {}): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined) search.append(name, String(value));
  const text = search.toString();
  return text === "" ? "" : `?${text}`;
}

function requestHeaders(options: LatchClientOptions, jar: SessionCookieJar | undefined, key: "admin" | "operator" | undefined, hasBody: boolean): Headers {
  const headers = new Headers({ accept: "application/json" });
  if (hasBody) headers.set("content-type", "application/json");
  if (options.tenantDomain && key !== "operator") headers.set("x-tenant-domain", options.tenantDomain);
  // Each key only ever goes to its own endpoints, never with a member's request; and a member's
  // session only with a member's request, never to the admin or operator API, which don't read it.
  const bearer = key === "admin" ? options.apiKey : key === "operator" ? options.operatorKey : undefined;
  if (bearer) headers.set("authorization", `Bearer ${bearer}`);
  const cookie = key === undefined ? jar?.header() : undefined;
  if (cookie !== undefined) headers.set("cookie", cookie);
  const forward = options.forward;
  if (forward?.userAgent) headers.set("user-agent", forward.userAgent);
  // Believed by Latch only from an address in its TRUST_PROXY (contract.md#d13); ignored otherwise.
  if (forward?.clientIp !== undefined) headers.set("x-forwarded-for", forward.clientIp);
  return headers;
}

/** Memory mode's jar, or a forwarding client's, seeded with the browser's session; none in browser mode. */
function sessionJar(options: LatchClientOptions): SessionCookieJar | undefined {
  if (options.forward !== undefined) return createSessionCookieJar(forwardedCookies(options.forward));
  return options.cookies === "memory" ? createSessionCookieJar() : undefined;
}

async function readSuccess<T>(response: Response): Promise<T> {
  try {
    return (await response.json()) as T;
  } catch {
    throw new LatchError({
      code: "internal_error",
      status: response.status,
      message: "The authentication service's answer was not JSON.",
      requestId: response.headers.get("x-request-id") ?? undefined,
    });
  }
}

function createTransport(options: LatchClientOptions): Transport {
  const baseUrl = (options.baseUrl ?? "").replace(/\/+$/, "");
  const jar = sessionJar(options);
  const received: string[] = [];
  const call = async <T>(id: OperationId, input: CallInput = {}): Promise<T> => {
    const operation = operations[id];
    // Read at call time, so a page's or test's later fetch patch is honoured; unbound calls of
    // window.fetch throw "Illegal invocation", hence the wrapper.
    const doFetch = options.fetch ?? ((...args: Parameters<typeof fetch>) => globalThis.fetch(...args));
    const url = `${baseUrl}${fillPath(operation.path, input.pathParams)}${queryString(input.query)}`;
    const hasBody = input.body !== undefined;
    let response: Response;
    try {
      response = await doFetch(url, {
        method: operation.method,
        headers: requestHeaders(options, jar, "admin" in operation ? "admin" : "operator" in operation ? "operator" : undefined, hasBody),
        body: hasBody ? JSON.stringify(input.body) : undefined,
        credentials: options.credentials ?? "same-origin",
      });
    } catch {
      throw networkError();
    }
    if (jar !== undefined) {
      jar.update(response.headers);
      received.push(...response.headers.getSetCookie());
    }
    if (response.ok) return readSuccess<T>(response);
    let text = "";
    try {
      text = await response.text();
    } catch {
      // The body broke off: the status alone says what happened.
    }
    throw errorFromResponse(response, text);
  };
  return { call, setCookies: () => [...received] };
}

/**
 * A navigation, not a call: the browser must go there itself (a link, `location.assign`, or a 302
 * from server code), since the answer is a redirect to the provider with a cookie bound to that browser.
 * The tenant is the one the URL's host names: no X-Tenant-Domain goes with a navigation.
 */
function federatedStartUrl(options: LatchClientOptions, connection: string, returnTo?: string): string {
  const baseUrl = (options.baseUrl ?? "").replace(/\/+$/, "");
  return `${baseUrl}${fillPath("/auth/federated/{connection}/start", { connection })}${queryString({ returnTo })}`;
}

export function createLatchClient(options: LatchClientOptions = {}): LatchClient {
  if (options.forward?.clientIp !== undefined) assertClientIp(options.forward.clientIp);
  const { call, setCookies } = createTransport(options);
  return {
    ...operationMethods(call),
    withRequest: (request, extra) => createLatchClient({ ...options, forward: forwardOfRequest(request, extra) }),
    federatedStartUrl: (connection, returnTo) => federatedStartUrl(options, connection, returnTo),
    setCookies,
  };
}

function operationMethods(call: Call): LatchOperations {
  return {
    registerWithPassword: (body) => call("registerWithPassword", { body }),
    registerWithMagicLink: (body) => call("registerWithMagicLink", { body }),
    verifyEmail: (body) => call("verifyEmail", { body }),
    resendVerification: (body) => call("resendVerification", { body }),
    loginWithPassword: (body) => call("loginWithPassword", { body }),
    getSession: () => call("getSession"),
    logout: () => call("logout"),
    sessionToken: () => call("sessionToken"),
    requestPasswordReset: (body) => call("requestPasswordReset", { body }),
    resetPassword: (body) => call("resetPassword", { body }),
    changePassword: (body) => call("changePassword", { body }),
    requestMagicLink: (body) => call("requestMagicLink", { body }),
    verifyMagicLink: (recordId, token, body = {}) => call("verifyMagicLink", { pathParams: { recordId, token }, body }),
    verifyLoginCode: (body) => call("verifyLoginCode", { body }),
    setUpTwoFactor: (body = {}) => call("setUpTwoFactor", { body }),
    enableTwoFactor: (body) => call("enableTwoFactor", { body }),
    disableTwoFactor: (body) => call("disableTwoFactor", { body }),
    regenerateRecoveryCodes: (body) => call("regenerateRecoveryCodes", { body }),
    getBotChallenge: () => call("getBotChallenge"),
    getMe: () => call("getMe"),
    updateMe: (body) => call("updateMe", { body }),
    changeEmail: (body) => call("changeEmail", { body }),
    confirmEmailChange: (body) => call("confirmEmailChange", { body }),
    secureAccount: (body) => call("secureAccount", { body }),
    listSessions: () => call("listSessions"),
    revokeSession: (id) => call("revokeSession", { pathParams: { id } }),
    revokeOtherSessions: () => call("revokeOtherSessions"),
    deleteAccount: (body) => call("deleteAccount", { body }),
    startPasskeyRegistration: (body = {}) => call("startPasskeyRegistration", { body }),
    finishPasskeyRegistration: (body) => call("finishPasskeyRegistration", { body }),
    listPasskeys: () => call("listPasskeys"),
    renamePasskey: (id, body) => call("renamePasskey", { pathParams: { id }, body }),
    deletePasskey: (id) => call("deletePasskey", { pathParams: { id } }),
    startPasskeyLogin: (body = {}) => call("startPasskeyLogin", { body }),
    finishPasskeyLogin: (body) => call("finishPasskeyLogin", { body }),
    listSignInConnections: () => call("listSignInConnections"),
    listIdentities: () => call("listIdentities"),
    startIdentityLink: (connection, body) => call("startIdentityLink", { pathParams: { connection }, body }),
    unlinkIdentity: (id, body = {}) => call("unlinkIdentity", { pathParams: { id }, body }),
    finishFederatedSecondFactor: (body) => call("finishFederatedSecondFactor", { body }),
    // The route refuses a POST without a body, though its schema marks the body optional: `{}` goes.
    confirmFederatedLink: () => call("confirmFederatedLink", { body: {} }),
    lockAccount: (body) => call("lockAccount", { body }),
    resendVerificationAsAdmin: (body) => call("resendVerificationAsAdmin", { body }),
    requirePasswordChange: (body) => call("requirePasswordChange", { body }),
    listAuditEvents: (query) => call("listAuditEvents", { query }),
    listMembers: (query = {}) => call("listMembers", { query }),
    getMember: (recordId) => call("getMember", { pathParams: { recordId } }),
    exportMember: (recordId) => call("exportMember", { pathParams: { recordId } }),
    deleteMember: (recordId) => call("deleteMember", { pathParams: { recordId } }),
    revokeMemberSessions: (body) => call("revokeMemberSessions", { body }),
    resetMemberTwoFactor: (recordId) => call("resetMemberTwoFactor", { pathParams: { recordId } }),
    createConnection: (body) => call("createConnection", { body }),
    listConnections: () => call("listConnections"),
    updateConnection: (id, body) => call("updateConnection", { pathParams: { id }, body }),
    deleteConnection: (id) => call("deleteConnection", { pathParams: { id } }),
    createOauthClient: (body) => call("createOauthClient", { body }),
    listOauthClients: () => call("listOauthClients"),
    getOauthClient: (clientId) => call("getOauthClient", { pathParams: { clientId } }),
    updateOauthClient: (clientId, body) => call("updateOauthClient", { pathParams: { clientId }, body }),
    deleteOauthClient: (clientId) => call("deleteOauthClient", { pathParams: { clientId } }),
    createTenant: (body) => call("createTenant", { body }),
    listTenants: (query = {}) => call("listTenants", { query }),
    showTenant: (domain) => call("showTenant", { pathParams: { domain } }),
    updateTenantSettings: (domain, body) => call("updateTenantSettings", { pathParams: { domain }, body }),
    deleteTenant: (domain, confirm) => call("deleteTenant", { pathParams: { domain }, query: { confirm } }),
    rotateApplicationKey: (applicationId) => call("rotateApplicationKey", { pathParams: { applicationId } }),
    rotateWebhookSecret: (domain) => call("rotateWebhookSecret", { pathParams: { domain } }),
    listWebhookDeliveries: (domain, query = {}) => call("listWebhookDeliveries", { pathParams: { domain }, query }),
  };
}
