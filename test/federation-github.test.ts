/**
 * decisions.md#federated-sign-in with GitHub: a `github` connection `gh` whose issuer is a local server
 * speaking GitHub's protocol (test/support/github-server.ts, laid out as a GitHub Enterprise Server).
 * The subject is GitHub's numeric user id; the email only the primary one GitHub marks verified. GitHub's
 * own answers are used as they are, its 200-with-error token refusal included.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ok } from "./support/assertions.js";
import { call, events, sendAlertsAndEvents } from "./support/account.js";
import { adminHeaders } from "./support/flows.js";
import { connectGitHub, failureReasonOf, federatedRoundTrip, GITHUB_CONNECTION, type RoundTripOptions } from "./support/federation.js";
import type { GitHubServer, GitHubUser } from "./support/github-server.js";
import { createHarness, sessionCookieOf, type Harness } from "./support/harness.js";

const OCTOCAT: GitHubUser = {
  id: 583231,
  login: "octocat",
  name: "The Octocat",
  emails: [
    { email: "octocat@example.net", primary: true, verified: true, visibility: "private" },
    { email: "octo-work@example.org", primary: false, verified: true },
  ],
};

async function tenantWithGitHub(t: { after(fn: () => Promise<void>): void }) {
  const h = await createHarness();
  t.after(() => h.close());
  await sendAlertsAndEvents(h);
  const github = await connectGitHub(h, t);
  return { h, github };
}

function roundTrip(h: Harness, github: GitHubServer, user: GitHubUser, options: RoundTripOptions = {}) {
  return federatedRoundTrip(h, github, user, { connection: GITHUB_CONNECTION, ...options });
}

async function membersOf(h: Harness) {
  return h.db.selectFrom("members").select(["id", "email"]).execute();
}

test("GitHub sign-up: GitHub's verified primary email makes a member signed in, subject the numeric id; the wire is GitHub's (client_secret_post, PKCE, JSON, Bearer, /api/v3)", async (t) => {
  const { h, github } = await tenantWithGitHub(t);
  const trip = await roundTrip(h, github, OCTOCAT, { returnTo: "/welcome" });
  const authorize = new URL(String(trip.start.headers.location));
  assert.equal(`${authorize.origin}${authorize.pathname}`, `${github.url}/login/oauth/authorize`);
  assert.equal(authorize.searchParams.get("client_id"), github.client.client_id);
  assert.equal(authorize.searchParams.get("redirect_uri"), github.client.redirect_uri);
  assert.equal(authorize.searchParams.get("scope"), "read:user user:email");
  assert.equal(authorize.searchParams.get("code_challenge_method"), "S256");
  assert.equal(authorize.searchParams.get("nonce"), null, "no ID token, no nonce");

  assert.equal(trip.callback.headers.location, "/welcome", trip.callback.body);
  const cookie = sessionCookieOf(trip.callback)!;
  const me = ok<{ email: string; name: string; authentication_type: string[] }>(await call(h, "GET", "/auth/me", cookie));
  assert.deepEqual([me.email, me.name, me.authentication_type], ["octocat@example.net", "The Octocat", ["Federated"]]);
  const identities = await h.db.selectFrom("federated_identities").select(["connection_id", "subject", "email"]).execute();
  assert.deepEqual(identities, [{ connection_id: GITHUB_CONNECTION, subject: "583231", email: "octocat@example.net" }]);
  const created = (await events(h)).filter((e) => e.event_type === "member.created");
  assert.deepEqual([created.length, created[0]?.method, created[0]?.connection], [1, "federated", GITHUB_CONNECTION]);

  const token = github.requests.find((r) => r.path === "/login/oauth/access_token")!;
  const form = new URLSearchParams(token.body);
  assert.equal(form.get("client_secret"), github.client.client_secret, "client_secret_post");
  assert.equal(token.headers.authorization, undefined);
  assert.ok(form.get("code_verifier"), "PKCE verifier sent");
  assert.match(String(token.headers.accept), /application\/json/, "GitHub answers JSON only when asked");
  const apiCalls = github.requests.filter((r) => r.path.startsWith("/api/v3/"));
  assert.deepEqual(
    apiCalls.map((r) => r.path),
    ["/api/v3/user", "/api/v3/user/emails?per_page=100"],
  );
  for (const r of apiCalls) assert.equal(r.headers.authorization, `Bearer ${github.accessTokens[0]}`);
});

test("GitHub: no verified primary email makes or matches nothing: an unverified primary, or a verified address that isn't primary", async (t) => {
  const { h, github } = await tenantWithGitHub(t);
  const unverifiedPrimary: GitHubUser = { ...OCTOCAT, emails: [{ email: "octocat@example.net", primary: true, verified: false }] };
  const verifiedSecondaryOnly: GitHubUser = {
    ...OCTOCAT,
    emails: [
      { email: "octocat@example.net", primary: true, verified: false },
      { email: "octo-work@example.org", primary: false, verified: true },
    ],
  };
  for (const user of [unverifiedPrimary, verifiedSecondaryOnly]) {
    const trip = await roundTrip(h, github, user);
    assert.equal(failureReasonOf(trip.callback), "email_not_confirmed");
    assert.equal(sessionCookieOf(trip.callback), undefined);
  }
  assert.deepEqual(await membersOf(h), []);
  assert.equal((await h.db.selectFrom("federated_identities").selectAll().execute()).length, 0);
});

test("GitHub: the same numeric id with another email and login signs the same member in again; another id is another person", async (t) => {
  const { h, github } = await tenantWithGitHub(t);
  const first = sessionCookieOf((await roundTrip(h, github, OCTOCAT)).callback)!;
  const recordId = ok<{ recordid: string }>(await call(h, "GET", "/auth/me", first)).recordid;
  const renamed: GitHubUser = {
    id: OCTOCAT.id,
    login: "octo-renamed",
    name: "Octo",
    emails: [{ email: "new-octo@example.com", primary: true, verified: true }],
  };
  const again = await roundTrip(h, github, renamed);
  const second = sessionCookieOf(again.callback)!;
  assert.ok(second, String(again.callback.headers.location));
  const me = ok<{ recordid: string; email: string }>(await call(h, "GET", "/auth/me", second));
  assert.deepEqual([me.recordid, me.email], [recordId, "octocat@example.net"], "the id decides; the member's email stays Latch's");
  assert.equal((await membersOf(h)).length, 1);

  const stranger = await roundTrip(h, github, { id: 9_000_001, login: "stranger", emails: [{ email: "octocat@example.net", primary: true, verified: true }] });
  assert.equal(stranger.callback.headers.location, "/ui/federated-link", "another id with a member's email is never linked on its own word");
});

test("GitHub refuses the code exchange with its 200-with-error answer (bad_verification_code): provider_error, nothing made", async (t) => {
  const { h, github } = await tenantWithGitHub(t);
  const trip = await roundTrip(h, github, OCTOCAT, { editBack: (back) => back.searchParams.set("code", "0123456789abcdef0123") });
  assert.equal(failureReasonOf(trip.callback), "provider_error");
  assert.equal(github.tokenCalls, 1);
  assert.equal(github.accessTokens.length, 0);
  assert.deepEqual(await membersOf(h), []);
  assert.ok(
    h.logs.some((line) => line.includes("provider_error") && !line.includes("bad_verification_code")),
    "logged by reason, not GitHub's words",
  );
});

test("GitHub: a wrong state is refused before the code is exchanged; a denial at GitHub is provider_error", async (t) => {
  const { h, github } = await tenantWithGitHub(t);
  const forged = await roundTrip(h, github, OCTOCAT, { editBack: (back) => back.searchParams.set("state", "forged-state-value") });
  assert.equal(failureReasonOf(forged.callback), "invalid_response");
  assert.equal(github.tokenCalls, 0, "the code never reached the token endpoint");

  const denied = await federatedRoundTrip(h, { signIn: (url) => github.deny(url) }, undefined, { connection: GITHUB_CONNECTION });
  assert.equal(denied.back.searchParams.get("error"), "access_denied");
  assert.equal(failureReasonOf(denied.callback), "provider_error");
  assert.deepEqual(await membersOf(h), []);
});

test("GitHub: a token without the user:email scope can't read the emails (GitHub's 404): provider_error", async (t) => {
  const { h, github } = await tenantWithGitHub(t);
  const narrowed = await call(h, "PATCH", `/auth/admin/connections/${GITHUB_CONNECTION}`, undefined, { scopes: ["read:user"] }, adminHeaders(h));
  assert.equal(narrowed.statusCode, 200, narrowed.body);
  const trip = await roundTrip(h, github, OCTOCAT);
  assert.equal(failureReasonOf(trip.callback), "provider_error");
  assert.deepEqual(await membersOf(h), []);
});

test("GitHub: the access token and the client secret are in no log line", async (t) => {
  const { h, github } = await tenantWithGitHub(t);
  const trip = await roundTrip(h, github, OCTOCAT);
  assert.ok(sessionCookieOf(trip.callback));
  await roundTrip(h, github, OCTOCAT, { editBack: (back) => back.searchParams.set("state", "forged-state-value") });
  assert.equal(github.accessTokens.length, 1);
  const logs = h.logs.join("\n");
  assert.ok(logs.length > 0);
  // GitHub's code (20 hex characters) is shorter than what logging.ts masks by length: the callback's
  // request line holds it. It is spent by then and bound to the PKCE verifier and the client secret.
  for (const secret of [...github.accessTokens, github.client.client_secret])
    assert.ok(!logs.includes(secret), `a GitHub secret in the logs: ${secret.slice(0, 4)}…`);
});
