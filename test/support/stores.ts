/** Fresh, migrated stores for contract suites: a SQLite file, or a PostgreSQL schema of its own. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrateToLatest, openDatabase } from "../../src/store/database.js";
import { keyedSubjectHasher } from "../../src/security/hashing.js";
import { Store } from "../../src/store/index.js";

/** The contract suites key lockout rows like the service does, under a key of their own. */
const subjects = keyedSubjectHasher("store-contract-subject-key");
import { createTestSchema } from "./postgres.js";

export interface MadeStore {
  store: Store;
  dispose: () => Promise<void>;
}

export async function sqliteStore(): Promise<MadeStore> {
  const dir = mkdtempSync(join(tmpdir(), "latch-store-"));
  const { db, reader } = openDatabase(`sqlite:${join(dir, "latch.db")}`);
  await migrateToLatest(db);
  const store = new Store(db, "sqlite", reader, subjects);
  return {
    store,
    dispose: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function postgresStore(): Promise<MadeStore> {
  const schema = await createTestSchema();
  const { db, dialect, reader } = openDatabase(schema.url);
  await migrateToLatest(db);
  const store = new Store(db, dialect, reader, subjects);
  // The schema is not dropped here: a DROP SCHEMA beside another file's migration breaks Kysely's
  // migrator, which looks across schemas; scripts/test-backends.mjs drops every test schema.
  return { store, dispose: () => store.close() };
}
