/** D13: the client IP is the socket address unless TRUST_PROXY names the proxy it came through. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { register } from "./support/flows.js";
import { createHarness, STRONG_PASSWORD, type Harness } from "./support/harness.js";

/** Registers member `n` from the socket address `remote`, with X-Forwarded-For `forwardedFor`. */
const registerThrough = (h: Harness, n: number, remote: string, forwardedFor: string) =>
  register(h, `m${n}@example.org`, STRONG_PASSWORD, { ip: remote, headers: { "x-forwarded-for": forwardedFor } });

test("through a trusted proxy, X-Forwarded-For names the client: per-IP limits count each client", async (t) => {
  const h = await createHarness({ env: { TRUST_PROXY: "10.0.0.1" } });
  t.after(() => h.close());
  for (let n = 1; n <= 8; n++) assert.equal((await registerThrough(h, n, "10.0.0.1", `198.51.100.${n}`)).statusCode, 200, `client ${n}`);
  for (let n = 9; n <= 13; n++) assert.equal((await registerThrough(h, n, "10.0.0.1", "198.51.100.200")).statusCode, 200);
  assert.equal((await registerThrough(h, 14, "10.0.0.1", "198.51.100.200")).statusCode, 429, "the 6th from one client behind the proxy");
});

test("from an untrusted address, X-Forwarded-For is ignored: the socket address counts", async (t) => {
  const h = await createHarness({ env: { TRUST_PROXY: "10.0.0.1" } });
  t.after(() => h.close());
  for (let n = 1; n <= 5; n++) assert.equal((await registerThrough(h, n, "203.0.113.5", `198.51.100.${n}`)).statusCode, 200);
  const sixth = await registerThrough(h, 6, "203.0.113.5", "198.51.100.6");
  assert.equal(sixth.statusCode, 429, "a spoofed X-Forwarded-For does not buy new IPs");
  assert.equal(sixth.json().code, "rate_limited");
});

test("without TRUST_PROXY, X-Forwarded-For is ignored", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  for (let n = 1; n <= 5; n++) assert.equal((await registerThrough(h, n, "10.0.0.1", `198.51.100.${n}`)).statusCode, 200);
  assert.equal((await registerThrough(h, 6, "10.0.0.1", "198.51.100.6")).statusCode, 429);
});
