// The SDK in server code (issue 29): a backend hands Latch the browser's session cookie (a Cookie
// header, a bare session id, a Fetch Request or a Node request), gets back the Set-Cookie lines to
// pass on, and forwards the browser's IP only when told to, which Latch believes only from an
// address in TRUST_PROXY (contract.md#d13). Real Latch on a real port, one with TRUST_PROXY and one without.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, test } from "node:test";
import { createLatchClient, isLatchError, type LatchClient } from "../packages/client/src/index.js";
import { createHarness, registerVerifiedMember, STRONG_PASSWORD, type Harness } from "./support/harness.js";

let trusting: Harness;
let trustingUrl: string;
let plain: Harness;
let plainUrl: string;

async function listening(h: Harness): Promise<string> {
  await h.app.listen({ port: 0, host: "127.0.0.1" });
  return `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
}

before(async () => {
  // This test's "backend" calls from 127.0.0.1: here it is Latch's trusted proxy, in `plain` it is not.
  trusting = await createHarness({ env: { TRUST_PROXY: "127.0.0.1" } });
  trustingUrl = await listening(trusting);
  plain = await createHarness();
  plainUrl = await listening(plain);
});
after(async () => {
  await trusting?.close();
  await plain?.close();
});

/** The headers of each request the client sends, before sending it. */
function recording(sent: Headers[]): typeof fetch {
  return async (input, init) => {
    sent.push(new Headers(init?.headers));
    return fetch(input, init);
  };
}

/** The backend's one client, as an app would make it at start: no cookie of its own. */
function backend(h: Harness, baseUrl: string, sent: Headers[] = []): LatchClient {
  return createLatchClient({ baseUrl, tenantDomain: h.tenant.domain, fetch: recording(sent) });
}

/** `session_id`'s value in Set-Cookie lines, as a browser would keep it. */
function sessionIdIn(lines: string[]): string | undefined {
  const line = lines.find((l) => l.startsWith("session_id="));
  return line?.slice("session_id=".length).split(";")[0];
}

/** The browser's first request: a login form posted to the backend, which logs in through Latch. */
async function loginThroughBackend(h: Harness, baseUrl: string, email: string, incoming: { headers: Record<string, string> }) {
  await registerVerifiedMember(h, email);
  const perRequest = backend(h, baseUrl).withRequest(incoming);
  const answer = await perRequest.loginWithPassword({ email, password: STRONG_PASSWORD });
  assert.equal(answer.authorized, true);
  const setCookies = perRequest.setCookies();
  const sessionId = sessionIdIn(setCookies);
  assert.ok(sessionId, `the login's Set-Cookie reached the backend: ${setCookies.join(" | ")}`);
  assert.match(setCookies[0]!, /HttpOnly/i);
  return { sessionId, perRequest };
}

test("a backend verifies a browser's session from its Cookie header; only session_id goes to Latch", async () => {
  const { sessionId } = await loginThroughBackend(plain, plainUrl, "fwd.cookie@example.org", { headers: {} });
  const sent: Headers[] = [];
  const latch = backend(plain, plainUrl, sent);
  const cookie = `theme=dark; session_id=${sessionId}; app_session=the-apps-own-secret`;

  // A Node/Express request, a Fetch Request, the header itself and the bare id: the same session.
  const viaNode = await latch.withRequest({ headers: { cookie, "user-agent": "Browser/1.0" } }).getSession();
  const viaFetch = await latch.withRequest(new Request("https://shop.example.com/account", { headers: { cookie } })).getSession();
  const viaHeader = await createLatchClient({ baseUrl: plainUrl, tenantDomain: plain.tenant.domain, forward: { cookie } }).getSession();
  const viaId = await createLatchClient({ baseUrl: plainUrl, tenantDomain: plain.tenant.domain, forward: { sessionId } }).getSession();
  assert.ok(viaNode.recordId);
  for (const session of [viaFetch, viaHeader, viaId]) assert.equal(session.recordId, viaNode.recordId);

  assert.equal(sent[0]!.get("cookie"), `session_id=${sessionId}`, "the app's own cookies stay with the app");
  assert.equal(sent[0]!.get("user-agent"), "Browser/1.0");
  assert.equal(sent[0]!.get("x-forwarded-for"), null, "no IP unless clientIp is given");
  // The backend's own client holds no session: forwarding made a new client per request.
  await assert.rejects(latch.getSession(), (err) => isLatchError(err, "unauthorized"));
  await assert.rejects(latch.withRequest({ headers: { cookie: "theme=dark" } }).getSession(), (err) => isLatchError(err, "unauthorized"));
});

test("a federated step on the browser's behalf forwards __Host-latch_fed_pending beside session_id, and nothing else", async () => {
  const { sessionId } = await loginThroughBackend(plain, plainUrl, "fwd.federated@example.org", { headers: {} });
  const sent: Headers[] = [];
  const cookie = `theme=dark; __Host-latch_fed_pending=not-a-step; session_id=${sessionId}; app_session=the-apps-own-secret`;
  const perRequest = backend(plain, plainUrl, sent).withRequest({ headers: { cookie } });
  // No step with that cookie: Latch refuses it (the session alone is not enough).
  await assert.rejects(perRequest.confirmFederatedLink(), (err) => isLatchError(err, "federation_failed"));
  assert.equal(sent[0]!.get("cookie"), `session_id=${sessionId}; __Host-latch_fed_pending=not-a-step`, "the app's own cookies stay with the app");
  assert.deepEqual((await perRequest.listIdentities()).identities, [], "a member call through the same client");
  await assert.rejects(perRequest.unlinkIdentity("no-such-identity", { password: STRONG_PASSWORD }), (err) => isLatchError(err, "not_found"));
});

test("logout on the browser's behalf ends the session and hands back the Set-Cookie that clears it", async () => {
  const { sessionId } = await loginThroughBackend(plain, plainUrl, "fwd.logout@example.org", { headers: {} });
  const perRequest = backend(plain, plainUrl).withRequest({ headers: { cookie: `session_id=${sessionId}` } });
  await perRequest.logout();
  const [clearing, ...more] = perRequest.setCookies();
  assert.deepEqual(more, []);
  assert.match(clearing!, /^session_id=;/);
  assert.match(clearing!, /Max-Age=0|Expires=Thu, 01 Jan 1970/i);
  await assert.rejects(perRequest.getSession(), (err) => isLatchError(err, "unauthorized"), "the client forgot the cleared cookie");
  const again = createLatchClient({ baseUrl: plainUrl, tenantDomain: plain.tenant.domain, forward: { sessionId } });
  await assert.rejects(again.getSession(), (err) => isLatchError(err, "unauthorized"), "the session is over at Latch");
});

test("the browser's User-Agent reaches the member's session list; its IP only with clientIp and a TRUST_PROXY that names the backend", async () => {
  const incoming = { headers: { "user-agent": "Browser/2.0", "x-forwarded-for": "203.0.113.66" } };

  // Trusted backend, clientIp given: Latch sees the browser's address.
  await registerVerifiedMember(trusting, "fwd.ip@example.org");
  const trustedLogin = backend(trusting, trustingUrl).withRequest(incoming, { clientIp: "198.51.100.7" });
  await trustedLogin.loginWithPassword({ email: "fwd.ip@example.org", password: STRONG_PASSWORD });
  const [trustedSession] = (await trustedLogin.listSessions()).sessions;
  assert.equal(trustedSession!.ip, "198.51.100.7");
  assert.equal(trustedSession!.userAgent, "Browser/2.0");

  // Trusted backend, no clientIp: the incoming X-Forwarded-For (the browser wrote it) is not passed on.
  await registerVerifiedMember(trusting, "fwd.noip@example.org");
  const sent: Headers[] = [];
  const unstated = backend(trusting, trustingUrl, sent).withRequest(incoming);
  await unstated.loginWithPassword({ email: "fwd.noip@example.org", password: STRONG_PASSWORD });
  assert.equal(sent[0]!.get("x-forwarded-for"), null);
  assert.equal((await unstated.listSessions()).sessions[0]!.ip, "127.0.0.1");

  // Untrusted backend: clientIp is sent and Latch ignores it, so the SDK can't forge an address.
  await registerVerifiedMember(plain, "fwd.untrusted@example.org");
  const untrusted = backend(plain, plainUrl).withRequest(incoming, { clientIp: "198.51.100.7" });
  await untrusted.loginWithPassword({ email: "fwd.untrusted@example.org", password: STRONG_PASSWORD });
  assert.equal((await untrusted.listSessions()).sessions[0]!.ip, "127.0.0.1");
});

test("clientIp is one address: a list or a header as it came is refused before anything is sent", () => {
  const latch = createLatchClient({ baseUrl: plainUrl });
  for (const bad of ["198.51.100.7, 10.0.0.1", "198.51.100.7 ", "unknown", "", "1.2.3.4.5"]) {
    assert.throws(() => latch.withRequest({ headers: {} }, { clientIp: bad }), TypeError, JSON.stringify(bad));
  }
  for (const good of ["198.51.100.7", "2001:db8::1", "::ffff:127.0.0.1"]) latch.withRequest({ headers: {} }, { clientIp: good });
});

test("a forwarded session goes only with member calls, never to the admin or operator API", async () => {
  const sent: Headers[] = [];
  const latch = createLatchClient({
    baseUrl: plainUrl,
    tenantDomain: plain.tenant.domain,
    apiKey: "not-a-key",
    operatorKey: "not-the-operator-key",
    fetch: recording(sent),
    forward: { sessionId: "a-session-id" },
  });
  await assert.rejects(latch.getSession(), (err) => isLatchError(err, "unauthorized"));
  await assert.rejects(latch.listMembers(), (err) => isLatchError(err, "unauthorized"));
  await assert.rejects(latch.listTenants(), (err) => isLatchError(err, "unauthorized"));
  assert.deepEqual(
    sent.map((headers) => headers.get("cookie")),
    ["session_id=a-session-id", null, null],
  );
});

/** The ```python block of a README. */
function pythonSnippet(readme: string): string {
  const found = /```python\n([\s\S]*?)```/.exec(readFileSync(readme, "utf8"));
  assert.ok(found, `${readme} has no Python snippet`);
  return found[1]!;
}

test("the READMEs' Python snippet reads the session for a forwarded session_id, and None without one", async (t) => {
  const snippet = pythonSnippet("README.md");
  assert.equal(pythonSnippet("packages/client/README.md"), snippet, "the two READMEs show the same snippet");
  const run = promisify(execFile);
  const hasRequests = await run("python3", ["-c", "import requests"]).then(
    () => true,
    () => false,
  );
  if (!hasRequests) return t.skip("python3 with requests is not installed");

  const { sessionId } = await loginThroughBackend(plain, plainUrl, "fwd.python@example.org", { headers: {} });
  const dir = mkdtempSync(join(tmpdir(), "latch-python-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // The snippet as printed, then its two settings pointed at this Latch, then the calls an app makes.
  const driver = `${snippet}
import json, sys
LATCH_URL, LATCH_TENANT = sys.argv[1], sys.argv[2]
print(json.dumps([latch_member(sys.argv[3]), latch_member("not-a-session"), latch_member(None)]))
`;
  writeFileSync(join(dir, "snippet.py"), driver);
  const { stdout } = await run("python3", [join(dir, "snippet.py"), plainUrl, plain.tenant.domain, sessionId]);
  const [session, unknown, none] = JSON.parse(stdout) as [{ recordId: string } | null, unknown, unknown];
  const expected = await createLatchClient({ baseUrl: plainUrl, tenantDomain: plain.tenant.domain, forward: { sessionId } }).getSession();
  assert.equal(session?.recordId, expected.recordId);
  assert.deepEqual([unknown, none], [null, null]);
});
