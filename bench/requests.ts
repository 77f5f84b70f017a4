/**
 * The requests of each scenario, as the load generator sends them. Latch runs behind a trusted
 * proxy (TRUST_PROXY=127.0.0.1), so X-Forwarded-For names the simulated client: each member always
 * logs in from the IP numbered by its place in the list (the same one in every scenario, so login
 * velocity, contract.md#d13, never sees a member on two IPs), and the other flows give every request an IP of
 * its own from a block of `{{ip}}` numbers (load-types.ts) that no other scenario uses.
 */
import type { LoadRequest } from "./load-types.js";
import { BENCH_PASSWORD, type BenchOidcClient, type ImportedLogins, type Seeded } from "./seed.js";

/** Where each scenario's `{{seq}}` (and so its `{{ip}}`) starts: blocks of 2^20 in 10.0.0.0/8. */
export const SEQ_BLOCKS = {
  logins: 0,
  registration: 1 << 20,
  forgot: 2 << 20,
  verify: 3 << 20,
  magic: 4 << 20,
  passkey: 5 << 20,
  oidc: 6 << 20,
  passwordChanges: 7 << 20,
  spray: 8 << 20,
  importedLogins: 9 << 20,
  federated: 10 << 20,
} as const;

/** The client IP numbered n in 10.0.0.0/8, as load.ts fills `{{ip}}`. */
export function clientIp(n: number): string {
  const i = n % 2 ** 24;
  return `10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`;
}

const post = (path: string, domain: string, body: unknown, ip: string): LoadRequest => ({
  method: "POST",
  path,
  headers: { "content-type": "application/json", "x-tenant-domain": domain, "x-forwarded-for": ip },
  body: JSON.stringify(body),
});

export const sessionChecks = (seeded: Seeded): LoadRequest[] =>
  seeded.sessions.map((s, i) => ({
    method: "GET",
    path: "/auth/session",
    headers: { "x-tenant-domain": s.domain, cookie: `session_id=${s.cookie}`, "x-forwarded-for": clientIp(SEQ_BLOCKS.logins + i) },
  }));

/** contract.md#d28: a session token per seeded session (no body, no Origin: a same-origin page's call). */
export const sessionTokens = (seeded: Seeded): LoadRequest[] =>
  seeded.sessions.map((s, i) => ({
    method: "POST",
    path: "/auth/session/token",
    headers: { "x-tenant-domain": s.domain, cookie: `session_id=${s.cookie}`, "x-forwarded-for": clientIp(SEQ_BLOCKS.logins + i) },
  }));

/** One login per seeded member, each from its member's IP. */
export const logins = (seeded: Seeded, password = BENCH_PASSWORD): LoadRequest[] =>
  seeded.logins.map((l, i) => post("/auth/login", l.domain, { email: l.email, password, "bot-challenge-response": "x" }, clientIp(SEQ_BLOCKS.logins + i)));

/** The password every change-password request sets: the policy's and the offline breach list's checks pass. */
export const BENCH_NEW_PASSWORD = "Another-Staple-43-Horse";

/**
 * contract.md#spec-4-3: each seeded changer changes its password once, with its own session and from
 * an IP of its own (the current password's check is behind the login's lockout, contract.md#d13).
 */
export const passwordChanges = (seeded: Seeded): LoadRequest[] =>
  seeded.passwordChanges.map((c, i) => {
    const request = post(
      "/auth/change-password",
      c.domain,
      { currentPassword: BENCH_PASSWORD, newPassword: BENCH_NEW_PASSWORD },
      clientIp(SEQ_BLOCKS.passwordChanges + i),
    );
    return { ...request, headers: { ...request.headers, cookie: `session_id=${c.cookie}` } };
  });

/** decisions.md#importing-members: one login per imported member of one format, each from its own IP. */
export const importedLogins = (imported: ImportedLogins, offset: number): LoadRequest[] =>
  imported.logins.map((l, i) =>
    post(
      "/auth/login",
      l.domain,
      { email: l.email, password: BENCH_PASSWORD, "bot-challenge-response": "x" },
      clientIp(SEQ_BLOCKS.importedLogins + offset + i),
    ),
  );

export const registrations = (domain: string): LoadRequest[] => [
  post(
    "/auth/register-password",
    domain,
    { email: "new{{seq}}@bench.example", name: "New Member", password: BENCH_PASSWORD, "bot-challenge-response": "x" },
    "{{ip}}",
  ),
];

/** Unknown emails, a new one and a new IP each time (10 per IP and 5 IPs per email an hour, contract.md#spec-8-2). */
export const forgotPasswords = (domain: string, prefix = "nobody"): LoadRequest[] => [
  post("/auth/forgot-password", domain, { email: `${prefix}{{seq}}@bench.example`, "bot-challenge-response": "x" }, "{{ip}}"),
];

/** forgot-password and request-magic-link in turn, each for an email and from an IP of its own. */
export const spray = (domain: string): LoadRequest[] => [
  ...forgotPasswords(domain, "spray"),
  post("/auth/request-magic-link", domain, { email: "spray{{seq}}@bench.example", "bot-challenge-response": "x" }, "{{ip}}"),
];

export const verifyEmails = (seeded: Seeded): LoadRequest[] =>
  seeded.verifyTokens.map((t) => post("/auth/verify-email", t.domain, { recordId: t.recordId, token: t.token }, "{{ip}}"));

export const verifyMagicLinks = (seeded: Seeded): LoadRequest[] =>
  seeded.magicTokens.map((t) => post(`/auth/verify-magic-link/${t.recordId}/${t.token}`, t.domain, { "bot-challenge-response": "x" }, "{{ip}}"));

export const passkeyLogins = (seeded: Seeded): LoadRequest[] =>
  seeded.passkeyLogins.map((p) => post("/auth/passkeys/login/verify", p.domain, p.body, "{{ip}}"));

/** contract.md#d28: the PKCE verifier of every bench authorization (a client makes a new one each time; the cost is the same). */
export const BENCH_PKCE_VERIFIER = "bench-pkce-verifier-0123456789abcdef0123456789abcdef";

/** A token request of the bench's confidential client (client_secret_basic), from the client's own IP. */
const tokenRequest = (c: BenchOidcClient, form: Record<string, string>, i: number): LoadRequest => ({
  method: "POST",
  path: "/oauth/token",
  headers: {
    "content-type": "application/x-www-form-urlencoded",
    authorization: `Basic ${Buffer.from(`${encodeURIComponent(c.clientId)}:${encodeURIComponent(c.secret)}`).toString("base64")}`,
    "x-tenant-domain": c.domain,
    "x-forwarded-for": clientIp(SEQ_BLOCKS.oidc + i),
  },
  body: new URLSearchParams(form).toString(),
});

/** Each authorization code exchanged once (they are single-use and live 60 s). */
export const codeExchanges = (c: BenchOidcClient, codes: string[]): LoadRequest[] =>
  codes.map((code, i) => tokenRequest(c, { grant_type: "authorization_code", code, redirect_uri: c.redirectUri, code_verifier: BENCH_PKCE_VERIFIER }, i));

/** Each refresh token used once (they rotate: a second use would revoke the family). */
export const refreshes = (c: BenchOidcClient, refreshTokens: string[]): LoadRequest[] =>
  refreshTokens.map((token, i) => tokenRequest(c, { grant_type: "refresh_token", refresh_token: token }, i));
