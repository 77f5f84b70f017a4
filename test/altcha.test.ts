/**
 * ALTCHA (D10): the default bot check. A client solving with altcha-lib passes once; a replay, an
 * expired, tampered, foreign-tenant or garbage payload fails.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Challenge } from "altcha-lib";
import { MINUTE } from "../src/core/clock.js";
import { createTenant } from "../src/flows/tenants/tenants.js";
import { solveAltcha } from "./support/altcha.js";
import { createHarness, get, post, STRONG_PASSWORD, type Harness } from "./support/harness.js";

async function fetchChallenge(h: Harness, domain = h.tenant.domain): Promise<Challenge> {
  const res = await get(h, "/auth/bot-challenge", { domain });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.headers["cache-control"], "no-store");
  return res.json<Challenge>();
}

const altchaHarness = () => createHarness({ settings: { botProtection: { provider: "altcha" } } });
const forgot = (h: Harness, payload: string | undefined, domain?: string) =>
  post(h, "/auth/forgot-password", { email: "someone@example.org", ...(payload === undefined ? {} : { "bot-challenge-response": payload }) }, { domain });

test("a new tenant without a bot setting gets ALTCHA (D10)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await createTenant(h.deps, {
    domain: "fresh.example.com",
    settings: { emailVerificationWebhook: "https://h.example/v", passwordResetWebhook: "https://h.example/r", magicLoginWebhook: "https://h.example/m" },
  });
  const tenant = await h.deps.store.tenants.findTenantByDomain("fresh.example.com");
  assert.deepEqual(tenant!.settings.botProtection, { provider: "altcha" });
  assert.equal((await get(h, "/auth/bot-challenge", { domain: "fresh.example.com" })).statusCode, 200);
  assert.equal((await get(h, "/auth/bot-challenge")).statusCode, 404, "a tenant on another provider has no challenge endpoint");
});

test("a solved challenge passes once; the replay fails", async (t) => {
  const h = await altchaHarness();
  t.after(() => h.close());
  const payload = await solveAltcha(await fetchChallenge(h));
  assert.equal((await forgot(h, payload)).statusCode, 200);
  const replay = await forgot(h, payload);
  assert.equal(replay.statusCode, 403);
  assert.equal(replay.json().code, "bot_check_failed");
  // Registration works end to end with a fresh solution.
  const registered = await post(h, "/auth/register-password", {
    email: "alt@example.org",
    name: "A",
    password: STRONG_PASSWORD,
    "bot-challenge-response": await solveAltcha(await fetchChallenge(h)),
  });
  assert.equal(registered.statusCode, 200, registered.body);
});

test("missing, garbage, unsolved, expired, tampered and foreign-tenant payloads fail", async (t) => {
  const h = await altchaHarness();
  t.after(() => h.close());
  await createTenant(h.deps, {
    domain: "other.example.com",
    settings: { emailVerificationWebhook: "https://h.example/v", passwordResetWebhook: "https://h.example/r", magicLoginWebhook: "https://h.example/m" },
  });
  const refused = async (payload: string | undefined, domain?: string) => {
    const res = await forgot(h, payload, domain);
    assert.equal(res.statusCode, 403, res.body);
    assert.equal(res.json().code, "bot_check_failed");
  };
  await refused(undefined);
  await refused("not base64 json");
  await refused(Buffer.from(JSON.stringify({ hello: "world" })).toString("base64"));

  const challenge = await fetchChallenge(h);
  const solved = JSON.parse(Buffer.from(await solveAltcha(challenge), "base64").toString()) as {
    challenge: Challenge;
    solution: { counter: number; derivedKey: string };
  };
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64");
  // The proof is the derived key (the counter only leads to it): a wrong key is an unsolved challenge.
  const key = solved.solution.derivedKey;
  await refused(encode({ ...solved, solution: { ...solved.solution, derivedKey: (key[0] === "0" ? "1" : "0") + key.slice(1) } }));
  const params = solved.challenge.parameters;
  await refused(
    encode({ ...solved, challenge: { ...solved.challenge, parameters: { ...params, data: { ...params.data, exp: Number(params.data!.exp) + 60 * MINUTE } } } }),
  );
  await refused(encode(solved), "other.example.com");

  h.clock.advance(10 * MINUTE);
  await refused(encode(solved));
});

test("a challenge solved just before its expiry still passes", async (t) => {
  const h = await altchaHarness();
  t.after(() => h.close());
  const payload = await solveAltcha(await fetchChallenge(h));
  h.clock.advance(10 * MINUTE - 1000);
  assert.equal((await forgot(h, payload)).statusCode, 200);
});

test("challenge issuance is limited per IP", async (t) => {
  const h = await altchaHarness();
  t.after(() => h.close());
  for (let i = 0; i < 60; i++) assert.equal((await get(h, "/auth/bot-challenge")).statusCode, 200);
  const limited = await get(h, "/auth/bot-challenge");
  assert.equal(limited.statusCode, 429);
  assert.ok(Number(limited.headers["retry-after"]) > 0);
});
