/**
 * Issue 17: a session's `last_seen_at` is written behind, in one transaction for every session
 * seen, instead of a commit (an fsync on SQLite's event loop) per session check. What a member or
 * admin reads is unchanged in this process; the row follows at the flush, and a closing store
 * writes what it kept; a big flush goes in chunks with requests served between them. Both stores.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { sha256Hex } from "../src/security/hashing.js";
import { FLUSH_CHUNK, SessionTouches } from "../src/store/session-touches.js";
import { signedInMember } from "./support/flows.js";
import { createHarness, get, post, type Harness } from "./support/harness.js";

async function storedSeenAt(h: Harness): Promise<number[]> {
  const rows = await h.db.selectFrom("sessions").select("last_seen_at").orderBy("created_at").orderBy("public_id").execute();
  return rows.map((r) => Number(r.last_seen_at));
}

test("a session check a minute later writes nothing at once; the member sees the new time, and the row holds it after the flush", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const start = h.clock.now();
  const cookies = [(await signedInMember(h, "ada@example.org")).cookie, (await signedInMember(h, "grace@example.org")).cookie];
  assert.deepEqual(await storedSeenAt(h), [start, start]);

  h.clock.advance(60_000);
  for (const cookie of cookies) assert.equal((await get(h, "/auth/session", { cookie })).statusCode, 200);
  assert.deepEqual(await storedSeenAt(h), [start, start], "no write on the session check");
  const listed = await get(h, "/auth/sessions", { cookie: cookies[0] });
  assert.equal(
    listed.json<{ sessions: { lastSeenAt: string }[] }>().sessions[0]!.lastSeenAt,
    new Date(start + 60_000).toISOString(),
    "this process reads it at once",
  );

  await h.deps.store.flushPending();
  assert.deepEqual(await storedSeenAt(h), [start + 60_000, start + 60_000], "both rows, in one flush");
});

test("closing the store writes what it kept", async (t) => {
  const h = await createHarness();
  t.after(() => h.close().catch(() => undefined));
  const start = h.clock.now();
  const cookie = (await signedInMember(h, "ada@example.org")).cookie;
  h.clock.advance(90_000);
  assert.equal((await get(h, "/auth/session", { cookie })).statusCode, 200);
  await h.deps.store.close();
  assert.deepEqual(await storedSeenAt(h), [start + 90_000]);
});

test("a logout between the check and the flush is not undone: the flush finds no row", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const cookie = (await signedInMember(h, "ada@example.org")).cookie;
  h.clock.advance(60_000);
  assert.equal((await get(h, "/auth/session", { cookie })).statusCode, 200);
  const out = await post(h, "/auth/logout", {}, { cookie });
  assert.equal(out.statusCode, 200, out.body);
  await h.deps.store.flushPending();
  assert.deepEqual(await storedSeenAt(h), []);
  assert.equal((await get(h, "/auth/session", { cookie })).statusCode, 401);
});

/** Three chunks of touches: sessions that no longer exist, then the member's, last. */
async function threeChunks(h: Harness) {
  const cookie = (await signedInMember(h, "ada@example.org")).cookie;
  const seen = h.clock.now() + 60_000;
  const tenantId = (await h.deps.store.tenants.findTenantByDomain(h.tenant.domain))!.id;
  const touches = new SessionTouches(h.db, (err) => assert.fail(String(err)), 60_000);
  const count = FLUSH_CHUNK * 2 + 10;
  for (let i = 1; i < count; i++) touches.touch(tenantId, sha256Hex(`gone-${i}`), seen);
  touches.touch(tenantId, sha256Hex(cookie), seen);
  return { touches, tenantId, idHash: sha256Hex(cookie), seen, count };
}

/** Flushes, running `between` at every turn of the event loop until the flush ends; returns how many turns ran it. */
async function flushWatching(touches: SessionTouches, between: () => Promise<void> | void): Promise<number> {
  let turns = 0;
  let flushed = false;
  const turn = async () => {
    if (flushed) return;
    turns++;
    await between();
    setImmediate(() => void turn());
  };
  setImmediate(() => void turn());
  await touches.flush().then(() => (flushed = true));
  return turns;
}

test("a big flush is written in chunks and lets other work run between them (no long stall on SQLite's synchronous driver)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { touches, seen, count } = await threeChunks(h);
  const between = await flushWatching(touches, () => undefined);
  assert.ok(between >= 2, `other work ran ${between} times during a flush of ${count} touches; at least once between each of its three chunks`);
  assert.deepEqual(await storedSeenAt(h), [seen], "the member's row is written");
});

test("while a flush is under way, this process still reads the kept time of a session whose chunk is not written yet", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { touches, tenantId, idHash, seen } = await threeChunks(h);
  const read: number[] = [];
  await flushWatching(touches, async () => {
    const [stored] = await storedSeenAt(h);
    read.push(touches.seenAt(tenantId, idHash, stored!));
  });
  assert.ok(read.length >= 2, `read ${read.length} times during the flush`);
  assert.deepEqual(new Set(read), new Set([seen]), "never the stored time before the row is written");
});
