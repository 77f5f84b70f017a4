/**
 * Migrations that rewrite rows, run from the schema before them with rows in it, on SQLite and
 * (with TEST_DATABASE_URL) PostgreSQL: what the next start of an upgraded deployment does.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { sql, type Kysely } from "kysely";
import { createMigrator, migrateToLatest, MIGRATIONS, openDatabase } from "../src/store/database.js";
import type { Database } from "../src/store/schema.js";
import { TenantStore } from "../src/store/tenants.js";
import { createTestSchema, TEST_DATABASE_URL } from "./support/postgres.js";

async function migrateUpTo(db: Kysely<Database>, last: string): Promise<void> {
  const subset = Object.fromEntries(Object.entries(MIGRATIONS).filter(([name]) => name <= last));
  const { error } = await (await createMigrator(db, { getMigrations: async () => subset })).migrateToLatest();
  assert.ifError(error);
}

async function databases(): Promise<{ name: string; url: string; dispose: () => Promise<void> }[]> {
  const dir = mkdtempSync(join(tmpdir(), "latch-migrations-"));
  const list = [{ name: "sqlite", url: `sqlite:${join(dir, "latch.db")}`, dispose: async () => rmSync(dir, { recursive: true, force: true }) }];
  if (TEST_DATABASE_URL) {
    // Not dropped here: a DROP SCHEMA beside another file's migration breaks Kysely's migrator,
    // which looks across schemas; scripts/test-backends.mjs drops every test schema after the run.
    const schema = await createTestSchema();
    list.push({ name: "postgres", url: schema.url, dispose: async () => {} });
  }
  return list;
}

test("0009: sessions from before get a random public id (not a prefix of their id hash) and last_seen_at = created_at", async () => {
  for (const { name, url, dispose } of await databases()) {
    const opened = openDatabase(url, { poolSize: 2, statementTimeoutMs: 5000 });
    try {
      await migrateUpTo(opened.db, "0008-member-administration");
      const idHashes = ["a".repeat(64), "b".repeat(64)];
      for (const idHash of idHashes) {
        await sql`insert into sessions (tenant_id, id_hash, member_id, created_at, expires_at) values ('ten_x', ${idHash}, 1, 1000, 2000)`.execute(opened.db);
      }
      await migrateToLatest(opened.db);
      const rows = await opened.db.selectFrom("sessions").select(["id_hash", "public_id", "last_seen_at"]).execute();
      assert.equal(rows.length, 2, name);
      for (const row of rows) {
        assert.match(row.public_id, /^[0-9a-f]{32}$/, name);
        assert.ok(!row.id_hash.startsWith(row.public_id), `${name}: the public id is not derived from the cookie's hash`);
        assert.equal(Number(row.last_seen_at), 1000, name);
      }
      assert.notEqual(rows[0]!.public_id, rows[1]!.public_id, name);
    } finally {
      await opened.db.destroy();
      opened.reader?.close();
      await dispose();
    }
  }
});

test("0016: tenants from before have no previous webhook secret; a rotation then keeps one", async () => {
  for (const { name, url, dispose } of await databases()) {
    const opened = openDatabase(url, { poolSize: 2, statementTimeoutMs: 5000 });
    try {
      await migrateUpTo(opened.db, "0015-alert-order");
      await sql`insert into applications (id, api_key_hash, created_at, updated_at) values ('app_x', ${"c".repeat(64)}, 1000, 1000)`.execute(opened.db);
      await sql`insert into tenants (id, domain, application_id, settings, webhook_secret_enc, created_at, updated_at)
        values ('ten_x', 'old.example.com', 'app_x', '{}', 'sealed-current', 1000, 1000)`.execute(opened.db);
      await migrateToLatest(opened.db);
      const tenants = new TenantStore(opened.db, opened.dialect);
      assert.deepEqual(await tenants.findWebhookSecrets("ten_x", 2000), { current: "sealed-current", previous: undefined }, name);
      await tenants.rotateWebhookSecret("ten_x", "sealed-new", 5000, 2000);
      assert.deepEqual(
        await tenants.findWebhookSecrets("ten_x", 4999),
        { current: "sealed-new", previous: { sealed: "sealed-current", expiresAt: 5000 } },
        name,
      );
      assert.deepEqual(await tenants.findWebhookSecrets("ten_x", 5000), { current: "sealed-new", previous: undefined }, `${name}: expired at its time`);
    } finally {
      await opened.db.destroy();
      opened.reader?.close();
      await dispose();
    }
  }
});

test("0021: a session opened by a passkey before it gets amr hwk, mfa; any other gets [], never a guess", async () => {
  for (const { name, url, dispose } of await databases()) {
    const opened = openDatabase(url, { poolSize: 2, statementTimeoutMs: 5000 });
    try {
      await migrateUpTo(opened.db, "0020-oauth-clients");
      for (const [idHash, byPasskey] of [
        ["a".repeat(64), 1],
        ["b".repeat(64), 0],
      ] as const) {
        await sql`insert into sessions (tenant_id, id_hash, member_id, created_at, expires_at, last_seen_at, public_id, by_passkey)
          values ('ten_x', ${idHash}, 1, 1000, 2000, 1000, ${idHash.slice(0, 32)}, ${byPasskey})`.execute(opened.db);
      }
      await migrateToLatest(opened.db);
      const rows = await opened.db.selectFrom("sessions").select(["id_hash", "amr"]).orderBy("id_hash").execute();
      assert.deepEqual(
        rows.map((row) => JSON.parse(row.amr) as string[]),
        [["hwk", "mfa"], []],
        name,
      );
    } finally {
      await opened.db.destroy();
      opened.reader?.close();
      await dispose();
    }
  }
});
