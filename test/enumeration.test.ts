/**
 * No answer reveals which emails are registered (spec 1.8, D5, issue 4): the four public email
 * endpoints answer alike for existing, locked and unknown emails, and login and forgot-password
 * take indistinguishable time. Timing is measured and reported, and fails only on a gross
 * difference such as a skipped hash: tests never assert wall-clock budgets.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { HOUR } from "../src/core/clock.js";
import { lockMember } from "./support/flows.js";
import { createHarness, post, registerVerifiedMember, STRONG_PASSWORD } from "./support/harness.js";

/** Status, the headers a client could compare, and the body; not date or request id. */
function visible(res: LightMyRequestResponse): unknown {
  const { date: _date, "x-request-id": _id, connection: _c, "keep-alive": _k, ...headers } = res.headers;
  return { status: res.statusCode, headers, body: res.body };
}

test("forgot-password, resend-verification and request-magic-link answer alike for existing, locked and unknown emails", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "known@example.org", STRONG_PASSWORD, "198.51.100.1");
  await lockMember(h, await registerVerifiedMember(h, "locked@example.org", STRONG_PASSWORD, "198.51.100.2"));
  for (const url of ["/auth/forgot-password", "/auth/resend-verification", "/auth/request-magic-link"]) {
    const answers = [];
    for (const [i, email] of ["known@example.org", "locked@example.org", "unknown@example.org"].entries()) {
      answers.push(visible(await post(h, url, { email, "bot-challenge-response": "x" }, { ip: `203.0.113.${50 + i}` })));
    }
    assert.deepEqual(answers[1], answers[0], `${url}: locked answers like existing`);
    assert.deepEqual(answers[2], answers[0], `${url}: unknown answers like existing`);
  }
});

test("registering a taken email answers like a free one, but for the decoy id", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "taken@example.org");
  await lockMember(h, await registerVerifiedMember(h, "locked@example.org", STRONG_PASSWORD, "198.51.100.3"));
  const register = (email: string) =>
    post(h, "/auth/register-password", { email, name: "N", password: STRONG_PASSWORD, "bot-challenge-response": "x" }, { ip: "203.0.113.77" });
  const taken = await register("taken@example.org");
  const locked = await register("locked@example.org");
  const free = await register("free@example.org");
  // Decoy and real ids come from one distribution (15 or 16 digits), so only the length header may differ.
  const shape = (res: LightMyRequestResponse) => {
    const { headers, ...rest } = visible(res) as { headers: Record<string, unknown> };
    const { "content-length": _length, ...others } = headers;
    return { ...rest, headers: others, body: { ...res.json(), recordid: typeof res.json().recordid } };
  };
  assert.deepEqual(shape(taken), shape(free));
  assert.deepEqual(shape(locked), shape(free), "a locked account answers like a free email too");
  assert.match(taken.json().recordid, /^\d{15,16}$/);
});

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  await work();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

interface Case {
  measured: (i: number) => Promise<unknown>;
  /** Untimed: background work, clock moves, resets between samples. */
  after?: (i: number) => Promise<unknown>;
}

/** Interleaves the two cases so drift (GC, other tests) hits both alike; returns medians in ms. */
async function compare(samples: number, a: Case, b: Case): Promise<[number, number]> {
  const ta: number[] = [];
  const tb: number[] = [];
  for (let i = 0; i < samples; i++) {
    ta.push(await timed(() => a.measured(i)));
    await a.after?.(i);
    tb.push(await timed(() => b.measured(i)));
    await b.after?.(i);
  }
  return [median(ta), median(tb)];
}

const GROSS_RATIO = 3;

test("timing: login with an unknown email costs what a wrong password costs", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "timed@example.org");
  const tenantId = (await h.deps.store.tenants.findTenantByDomain(h.tenant.domain))!.id;
  const inject = async (email: string) => {
    const res = await h.app.inject({
      method: "POST",
      url: "/auth/login",
      remoteAddress: "203.0.113.9",
      headers: { "x-tenant-domain": h.tenant.domain },
      payload: { email, password: "Wrong-Password-1", "bot-challenge-response": "x" },
    });
    assert.equal(res.statusCode, 401, res.body);
  };
  const [wrong, ghost] = await compare(
    20,
    {
      measured: () => inject("timed@example.org"),
      after: async () => {
        await h.deps.background.drain();
        await h.deps.store.limits.clearLockout(tenantId, "timed@example.org");
      },
    },
    { measured: (i) => inject(`ghost-${i}@example.org`), after: () => h.deps.background.drain() },
  );
  t.diagnostic(`login medians over 20 samples: wrong password ${wrong.toFixed(1)} ms, unknown email ${ghost.toFixed(1)} ms`);
  const ratio = Math.max(wrong, ghost) / Math.min(wrong, ghost);
  assert.ok(ratio < GROSS_RATIO, `login timing differs grossly: ${wrong.toFixed(1)} vs ${ghost.toFixed(1)} ms`);
});

test("timing: forgot-password for an existing email costs what an unknown one costs", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "reset-me@example.org");
  const inject = async (email: string, i: number) => {
    const res = await h.app.inject({
      method: "POST",
      url: "/auth/forgot-password",
      remoteAddress: `203.0.113.${100 + (i % 100)}`,
      headers: { "x-tenant-domain": h.tenant.domain },
      payload: { email, "bot-challenge-response": "x" },
    });
    assert.equal(res.statusCode, 200, res.body);
  };
  const settle = async () => {
    await h.deps.background.drain();
    h.clock.advance(HOUR); // a fresh window for the per-IP and per-email limits
  };
  const [existing, unknown] = await compare(
    40,
    { measured: (i) => inject("reset-me@example.org", i), after: settle },
    { measured: (i) => inject(`nobody-${i}@example.org`, i), after: settle },
  );
  t.diagnostic(`forgot-password medians over 40 samples: existing ${existing.toFixed(2)} ms, unknown ${unknown.toFixed(2)} ms`);
  const ratio = Math.max(existing, unknown) / Math.min(existing, unknown);
  assert.ok(ratio < GROSS_RATIO, `forgot-password timing differs grossly: ${existing.toFixed(2)} vs ${unknown.toFixed(2)} ms`);
});
