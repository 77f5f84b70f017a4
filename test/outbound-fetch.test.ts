/**
 * createGuardedFetch, the fetch openid-client uses for an upstream provider (contract.md#d27), against
 * real loopback servers: what it sends and answers, and the guard of contract.md#d9 it keeps (internal
 * addresses, redirects, size cap, time, the caller's abort).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { CustomFetch } from "openid-client";
import { createGuardedFetch } from "../src/security/outbound.js";
import { closedPortUrl, startLocalServer, type LocalServer } from "./support/local-servers.js";

// Loopback is "internal": the tests that talk to a server open the guard as dev and tests do.
const openFetch = createGuardedFetch({ allowPrivateNetworks: true, timeoutMs: 2_000 });

// openid-client takes it as is: this line fails to compile if the shapes drift apart.
const asCustomFetch: CustomFetch = openFetch;

async function started(t: { after: (fn: () => Promise<void>) => void }, answer: Parameters<typeof startLocalServer>[0]): Promise<LocalServer> {
  const server = await startLocalServer(answer);
  t.after(() => server.close());
  return server;
}

/** The rejection of `promise`: fetch-like failures are TypeErrors whose message names no URL or host. */
async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  assert.fail("expected a rejection");
}

test("GET: the request's headers go out, and the status, JSON body and headers come back in a Response", async (t) => {
  const server = await started(t, (_request, response) => {
    response.writeHead(200, {
      "content-type": "application/json",
      "cache-control": "max-age=300, public",
      "www-authenticate": 'Bearer error="invalid_token"',
    });
    response.end(JSON.stringify({ issuer: "https://idp.example" }));
  });
  const response = await asCustomFetch(`${server.url}/.well-known/openid-configuration?x=1`, {
    method: "GET",
    headers: { accept: "application/json", "user-agent": "latch-test" },
    body: undefined,
    redirect: "manual",
  });
  assert.equal(response.status, 200);
  assert.deepEqual(await response.json(), { issuer: "https://idp.example" });
  assert.equal(response.headers.get("content-type"), "application/json");
  assert.equal(response.headers.get("cache-control"), "max-age=300, public");
  assert.equal(response.headers.get("www-authenticate"), 'Bearer error="invalid_token"');
  const [request] = server.requests;
  assert.equal(request?.method, "GET");
  assert.equal(request?.path, "/.well-known/openid-configuration?x=1");
  assert.equal(request?.headers.accept, "application/json");
  assert.equal(request?.headers["user-agent"], "latch-test");
  assert.equal(request?.headers["accept-encoding"], "identity", "the Response decodes nothing, so nothing encoded is asked for");
});

test("POST: a URLSearchParams body goes out as a form with its length, and an error status is an answer, not a rejection", async (t) => {
  const server = await started(t, (_request, response) => {
    response.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ error: "invalid_grant" }));
  });
  const form = new URLSearchParams({ grant_type: "authorization_code", code: "abc", code_verifier: "v".repeat(43) });
  const response = await openFetch(`${server.url}/token`, { method: "POST", headers: { authorization: "Basic Y2xpZW50OnNlY3JldA==" }, body: form });
  assert.equal(response.status, 400);
  assert.deepEqual(await response.json(), { error: "invalid_grant" });
  const [request] = server.requests;
  assert.equal(request?.method, "POST");
  assert.equal(request?.body, form.toString());
  assert.equal(request?.headers["content-type"], "application/x-www-form-urlencoded;charset=UTF-8");
  assert.equal(request?.headers["content-length"], String(Buffer.byteLength(form.toString())));
  assert.equal(request?.headers.authorization, "Basic Y2xpZW50OnNlY3JldA==");

  const raw = await openFetch(`${server.url}/bytes`, {
    method: "post",
    headers: { "content-type": "application/jwt" },
    body: new TextEncoder().encode("a.b.c"),
  });
  assert.equal(raw.status, 400);
  assert.equal(server.requests[1]?.body, "a.b.c");
  assert.equal(server.requests[1]?.headers["content-type"], "application/jwt");
});

test("an internal address is refused unless private networks are allowed, by literal and by name, and the error names no URL", async (t) => {
  const server = await started(t, (_request, response) => void response.writeHead(200).end("{}"));
  const guarded = createGuardedFetch({ allowPrivateNetworks: false, timeoutMs: 2_000 });
  const port = new URL(server.url).port;
  for (const url of [`${server.url}/jwks`, `http://localhost:${port}/jwks`, `http://[::ffff:127.0.0.1]:${port}/jwks`]) {
    const error = await rejection(guarded(url));
    assert.ok(error instanceof TypeError, url);
    assert.equal(error.message, "internal address refused", url);
    assert.ok(!error.message.includes("127.0.0.1") && !error.message.includes("localhost") && !error.message.includes("jwks"));
  }
  assert.equal(server.requests.length, 0, "nothing reached the server");
  const refused = await rejection(openFetch(`${await closedPortUrl()}/jwks`));
  assert.ok(refused instanceof TypeError);
  assert.equal(refused.message, "connection refused");
  assert.equal((await rejection(openFetch("file:///etc/passwd"))).message, "unsupported url scheme");
});

test("a redirect is answered as is, never followed, whatever the caller asked", async (t) => {
  const elsewhere = await started(t, (_request, response) => void response.writeHead(200).end("{}"));
  const server = await started(t, (_request, response) => void response.writeHead(302, { location: `${elsewhere.url}/stolen` }).end());
  for (const redirect of ["manual", "follow"] as const) {
    const response = await openFetch(`${server.url}/token`, { method: "POST", body: "code=abc", redirect });
    assert.equal(response.status, 302);
    assert.equal(response.headers.get("location"), `${elsewhere.url}/stolen`);
  }
  assert.equal(elsewhere.requests.length, 0, "the body never went to the redirect's target");
  const empty = await started(t, (_request, response) => void response.writeHead(204).end());
  assert.equal((await openFetch(`${empty.url}/revoke`, { method: "POST", body: "token=x" })).status, 204);
});

test("a body over the cap is refused (256 KiB by default, the cap a parameter); a JWKS the size of Microsoft's passes", async (t) => {
  const sizes: Record<string, number> = { "/jwks": 20 * 1024, "/huge": 300 * 1024, "/small": 2 * 1024 };
  const server = await started(t, (request, response) => {
    response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: "k".repeat(sizes[request.path]!) }));
  });
  const jwks = await openFetch(`${server.url}/jwks`);
  assert.equal(((await jwks.json()) as { keys: string }).keys.length, 20 * 1024);
  const huge = await rejection(openFetch(`${server.url}/huge`));
  assert.ok(huge instanceof TypeError);
  assert.equal(huge.message, "response too large");
  const tight = createGuardedFetch({ allowPrivateNetworks: true, timeoutMs: 2_000, maxResponseBytes: 1024 });
  assert.equal((await rejection(tight(`${server.url}/small`))).message, "response too large");
});

test("a server that never answers, or stops mid-body, is a timeout; the caller's signal aborts with its reason", async (t) => {
  const server = await started(t, (request, response) => {
    if (request.path === "/drip") response.writeHead(200, { "content-type": "application/json" }).write('{"keys":[');
    // Any other path: no answer at all.
  });
  const quick = createGuardedFetch({ allowPrivateNetworks: true, timeoutMs: 200 });
  const started_ = process.hrtime.bigint();
  const silent = await rejection(quick(`${server.url}/silent`));
  assert.ok(silent instanceof TypeError);
  assert.equal(silent.message, "timeout");
  assert.ok(Number(process.hrtime.bigint() - started_) / 1e6 < 1_500, "the overall timer ends it");
  assert.equal((await rejection(quick(`${server.url}/drip`))).message, "timeout", "a partial body is never handed over");

  const controller = new AbortController();
  const pending = openFetch(`${server.url}/silent`, { signal: controller.signal });
  controller.abort(new DOMException("gave up", "TimeoutError"));
  const aborted = await rejection(pending);
  assert.equal(aborted.name, "TimeoutError");
  const already = await rejection(openFetch(`${server.url}/silent`, { signal: AbortSignal.abort() }));
  assert.equal(already.name, "AbortError");
});
