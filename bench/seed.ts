/**
 * Seeds a Latch database (SQLite, or an empty PostgreSQL database) for a benchmark, through Latch's own store, schema and flows:
 * tenants (createTenant), members (bulk inserts into the migrated `members` table, verified,
 * sharing one Argon2id hash of BENCH_PASSWORD), live sessions (createSession), single-use
 * tokens (issueOneTimeToken) and imported members with foreign hashes (importMembers, the flow of
 * `latch import`). Returns what the load generator needs: cookies, emails, tokens.
 */
import { pbkdf2Sync } from "node:crypto";
import { join } from "node:path";
import { hash as bcryptHash } from "@node-rs/bcrypt";
import { sql, type Kysely } from "kysely";
import { loadConfig } from "../src/config.js";
import { createDeps } from "../src/create-deps.js";
import type { Deps } from "../src/deps.js";
import { importMembers } from "../src/flows/admin/import.js";
import { createConnection } from "../src/flows/federation/connections.js";
import { createSession } from "../src/flows/kernel/sessions.js";
import { issueOneTimeToken } from "../src/flows/kernel/one-time-tokens.js";
import { createTenant, findTenantOrThrow } from "../src/flows/tenants/tenants.js";
import { createLogger } from "../src/logging.js";
import type { Tenant } from "../src/model.js";
import { openDatabase } from "../src/store/database.js";
import type { Database } from "../src/store/schema.js";
import { hashClientSecret } from "../src/security/client-secrets.js";
import { sha256Hex } from "../src/security/hashing.js";
import { SoftAuthenticator } from "../test/support/webauthn-authenticator.js";
import type { AuthenticationResponseJSON } from "@simplewebauthn/server";

export const BENCH_PASSWORD = "Correct-Horse-42-Battery";
export const BENCH_SECRETS_KEY = "42".repeat(32);

export interface SeedPlan {
  /** SQLite: the database is `latch.db` in this directory ... */
  dataDir?: string;
  /** ... unless this DATABASE_URL is given (PostgreSQL: an empty database, migrated here). */
  databaseUrl?: string;
  tenants: number;
  /** Verified password members per tenant, `m<i>@bench.example` (logins and sessions use them). */
  membersPerTenant: number;
  /** Live sessions, spread over the first members of every tenant. */
  sessions: number;
  /** Pending members with a verify-email token each, and magic-link members with a token each (first tenant). */
  verifyTokens?: number;
  magicTokens?: number;
  /** contract.md#d26: signed passkey logins, each answering a challenge of its own, by the first 50 members of the first tenant. */
  passkeyLogins?: number;
  /** contract.md#spec-4-3: members of the first tenant (`changer<i>@`) with a live session each, whose password each change-password request changes once. */
  passwordChanges?: number;
  /** decisions.md#importing-members: members of the first tenant imported with a foreign hash of BENCH_PASSWORD, this many per format, each to log in once. */
  importedPerFormat?: number;
  /** decisions.md#federated-sign-in: an `oidc` connection of the first tenant to this upstream (its client registered for the connection's callback). */
  upstream?: BenchUpstream;
  /** Where the tenant's webhooks go (a local sink). */
  webhookUrl: string;
}

export interface Seeded {
  databaseUrl: string;
  domains: string[];
  /** Emails of seeded members, as [domain, email] pairs, interleaved across tenants. */
  logins: Array<{ domain: string; email: string }>;
  sessions: Array<{ domain: string; cookie: string }>;
  verifyTokens: Array<{ domain: string; recordId: string; token: string }>;
  magicTokens: Array<{ domain: string; recordId: string; token: string }>;
  /** Bodies for `POST /auth/passkeys/login/verify`, each usable once. */
  passkeyLogins: Array<{ domain: string; body: { response: AuthenticationResponseJSON } }>;
  /** contract.md#d28: a first-party confidential OAuth client of the first tenant, for the token endpoint's rows. */
  oidcClient: BenchOidcClient;
  /** Members with a session of their own, each to change its password once (the session cookie and the email, for the IP). */
  passwordChanges: Array<{ domain: string; cookie: string }>;
  /** Per foreign format, members whose stored hash is still that format's: the first login verifies it and rehashes. */
  importedLogins: ImportedLogins[];
}

/** The upstream OpenID provider the bench's connection trusts, and the client Latch is there. */
export interface BenchUpstream {
  issuer: string;
  clientId: string;
  clientSecret: string;
}

/** The domain of the seeded tenant numbered t (the first, t0, holds every single-use scenario's members). */
export const tenantDomain = (t: number): string => `t${t}.bench.example`;

/** The id of the bench's federated connection: its callback is `https://<first tenant>/auth/federated/bench-idp/callback`. */
export const BENCH_CONNECTION = "bench-idp";

export interface ImportedLogins {
  /** What the row calls the hash, its cost included. */
  label: string;
  logins: Array<{ domain: string; email: string }>;
}

export interface BenchOidcClient {
  domain: string;
  clientId: string;
  secret: string;
  redirectUri: string;
}

/** Latch's own clients are made with a random secret; the bench's is fixed, and stored hashed as theirs. */
const BENCH_OIDC_CLIENT = { clientId: "bench-app", secret: "bench-app-secret-0123456789abcdef0123456789", redirectUri: "https://app.bench.example/callback" };

async function seedOidcClient(deps: Deps, tenant: Tenant, now: number): Promise<BenchOidcClient> {
  await deps.store.oauthClients.insertClient(tenant.id, {
    clientId: BENCH_OIDC_CLIENT.clientId,
    name: "The bench's application",
    type: "confidential",
    firstParty: true,
    redirectUris: [BENCH_OIDC_CLIENT.redirectUri],
    postLogoutRedirectUris: [],
    secretHash: hashClientSecret(BENCH_OIDC_CLIENT.secret),
    createdAt: now,
    updatedAt: now,
  });
  return { domain: tenant.domain, ...BENCH_OIDC_CLIENT };
}

const BATCH = 1000;

function linkParts(link: string): { recordId: string; token: string } {
  const [, , recordId, token] = new URL(link).pathname.split("/");
  return { recordId: recordId!, token: token! };
}

async function insertMembers(
  db: Kysely<Database>,
  tenant: Tenant,
  first: number,
  count: number,
  prefix: string,
  phc: string,
  salt: string,
  now: number,
  magic = false,
): Promise<void> {
  for (let start = 0; start < count; start += BATCH) {
    const rows = [];
    for (let i = start; i < Math.min(count, start + BATCH); i++) {
      rows.push({
        tenant_id: tenant.id,
        id: 100_000_000_000_000 + first + i,
        email: `${prefix}${i}@bench.example`,
        name: "Bench Member",
        status: "Unlocked",
        has_password_auth: magic ? 0 : 1,
        has_magic_link_auth: magic ? 1 : 0,
        password_hash: magic ? null : phc,
        password_salt: magic ? null : salt,
        email_verified: 1,
        two_factor_status: "Disabled",
        totp_secret_enc: null,
        totp_pending_secret_enc: null,
        created_at: now,
        updated_at: now,
      });
    }
    await db.insertInto("members").values(rows).execute();
  }
}

/**
 * contract.md#d26: a passkey for each of the first `members` members (software authenticator, ES256) and
 * `count` login challenges, each answered in advance. The counter stays 0, as on authenticators
 * that keep none, so the answers may arrive in any order. Challenges live 2 h here (5 min in the
 * flow) so the scenario can run late in the benchmark.
 */
async function seedPasskeyLogins(db: Kysely<Database>, tenant: Tenant, members: number, count: number, now: number): Promise<Seeded["passkeyLogins"]> {
  if (count === 0) return [];
  const auth = new SoftAuthenticator();
  const origin = `https://${tenant.domain}`;
  const credentialIds: string[] = [];
  for (let m = 0; m < members; m++) {
    const memberId = 100_000_000_000_000 + m;
    const creation = {
      rp: { id: tenant.domain, name: tenant.domain },
      user: { id: Buffer.from(String(memberId)).toString("base64url"), name: `m${m}`, displayName: "Bench" },
      challenge: "AAAA",
      pubKeyCredParams: [{ type: "public-key" as const, alg: -7 }],
    };
    const id = auth.createCredential(creation, origin).id;
    const credential = auth.credentials.find((c) => c.id === id)!;
    credentialIds.push(id);
    await db
      .insertInto("passkeys")
      .values({
        tenant_id: tenant.id,
        id: `bench${m}`,
        member_id: memberId,
        credential_id: id,
        public_key: Buffer.from(credential.publicKey).toString("base64url"),
        counter: 0,
        backup_eligible: 0,
        backed_up: 0,
        transports: "[]",
        name: "Bench",
        created_at: now,
        last_used_at: null,
      })
      .execute();
  }
  const out: Seeded["passkeyLogins"] = [];
  for (let start = 0; start < count; start += BATCH) {
    const rows = [];
    for (let i = start; i < Math.min(count, start + BATCH); i++) {
      const challenge = Buffer.from(`bench-challenge-${i}-${now}`).toString("base64url");
      rows.push({
        tenant_id: tenant.id,
        challenge_hash: sha256Hex(challenge),
        purpose: "login",
        member_id: 0,
        created_at: now,
        expires_at: now + 2 * 3600_000,
      });
      const response = auth.getAssertion({ challenge, rpId: tenant.domain, userVerification: "required" }, origin, {
        credentialId: credentialIds[i % credentialIds.length]!,
        signCount: 0,
      });
      out.push({ domain: tenant.domain, body: { response } });
    }
    await db.insertInto("passkey_challenges").values(rows).execute();
  }
  return out;
}

/** contract.md#spec-4-3: `count` members of their own, each with one live session, for change-password. */
async function seedPasswordChanges(
  db: Kysely<Database>,
  deps: Deps,
  tenant: Tenant,
  count: number,
  phc: string,
  salt: string,
  now: number,
): Promise<Seeded["passwordChanges"]> {
  const base = 30_000_000;
  await insertMembers(db, tenant, base, count, "changer", phc, salt, now);
  const out: Seeded["passwordChanges"] = [];
  for (let start = 0; start < count; start += BATCH) {
    await deps.store.transaction(async (tx) => {
      for (let i = start; i < Math.min(count, start + BATCH); i++) {
        const issued = await createSession(tx, deps, tenant, 100_000_000_000_000 + base + i, { ip: "198.51.100.7", userAgent: "bench" }, now, { amr: ["pwd"] });
        out.push({ domain: tenant.domain, cookie: issued.sessionId });
      }
    });
  }
  return out;
}

/** Django 5.2's default PBKDF2-SHA256 iterations: what a current Django export carries. */
export const DJANGO_ITERATIONS = 1_000_000;
/** The cost most bcrypt libraries default to (bcrypt.js, node.bcrypt.js, Ruby's, PHP's password_hash). */
export const BCRYPT_COST = 10;

/**
 * One hash of BENCH_PASSWORD per foreign format, at the cost those systems use today, the same on
 * every line (as measureImport's): made here, since the fixtures' hashes (test/fixtures/import) are
 * cheap ones made for tests (bcrypt cost 5, Django at 10,000). A login answering 200 proves Latch
 * verifies them.
 */
async function foreignHashes(deps: Deps): Promise<Array<{ label: string; hash: string }>> {
  const salt = deps.random.bytes(12).toString("hex");
  const django = pbkdf2Sync(BENCH_PASSWORD, salt, DJANGO_ITERATIONS, 32, "sha256").toString("base64");
  return [
    { label: `bcrypt, cost ${BCRYPT_COST}`, hash: await bcryptHash(BENCH_PASSWORD, BCRYPT_COST) },
    { label: `PBKDF2-SHA256 (Django), ${DJANGO_ITERATIONS.toLocaleString("en")} iterations`, hash: `pbkdf2_sha256$${DJANGO_ITERATIONS}$${salt}$${django}` },
  ];
}

/** decisions.md#importing-members: `perFormat` verified members per foreign format, through the import's own flow. */
async function seedImportedLogins(deps: Deps, tenant: Tenant, perFormat: number): Promise<ImportedLogins[]> {
  if (perFormat === 0) return [];
  const out: ImportedLogins[] = [];
  for (const [f, { label, hash }] of (await foreignHashes(deps)).entries()) {
    const logins: ImportedLogins["logins"] = [];
    for (let start = 0; start < perFormat; start += BATCH) {
      const members = [];
      for (let i = start; i < Math.min(perFormat, start + BATCH); i++) {
        const email = `imported${f}-${i}@bench.example`;
        members.push({ email, emailVerified: true, name: "Imported Member", passwordHash: hash });
        logins.push({ domain: tenant.domain, email });
      }
      const report = await importMembers(deps, tenant, { members, dryRun: false }, { ip: "198.51.100.7", userAgent: "bench" });
      if (report.imported !== members.length)
        throw new Error(`seeding ${label}: ${report.imported} of ${members.length} imported (${JSON.stringify(report.refused.slice(0, 3))})`);
    }
    out.push({ label, logins });
  }
  return out;
}

/**
 * The seeded database as a running deployment's is: PostgreSQL with its planner statistics (autovacuum
 * gathers them a minute or so after a bulk load; before, the session check's first rounds read at
 * 40 % of the later ones in the same run), SQLite with its write-ahead log checkpointed.
 */
async function settle(db: Kysely<Database>, databaseUrl: string): Promise<void> {
  if (databaseUrl.startsWith("sqlite:")) await sql`PRAGMA wal_checkpoint(TRUNCATE)`.execute(db);
  else await sql`ANALYZE`.execute(db);
}

export async function seedLatch(plan: SeedPlan): Promise<Seeded> {
  if ((plan.dataDir === undefined) === (plan.databaseUrl === undefined)) throw new Error("seedLatch: give exactly one of dataDir and databaseUrl");
  const databaseUrl = plan.databaseUrl ?? `sqlite:${join(plan.dataDir!, "latch.db")}`;
  const config = loadConfig({
    DATABASE_URL: databaseUrl,
    SECRETS_KEY: BENCH_SECRETS_KEY,
    BREACH_CHECK_MODE: "offline",
    LOG_LEVEL: "silent",
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
  });
  const deps: Deps = await createDeps(config, { log: createLogger("silent") });
  const { db, reader } = openDatabase(databaseUrl);
  try {
    const now = deps.clock.now();
    const salt = deps.random.bytes(32);
    const phc = await deps.hasher.hashPassword(BENCH_PASSWORD, salt);
    const tenants: Tenant[] = [];
    let applicationId: string | undefined;
    for (let t = 0; t < plan.tenants; t++) {
      const created = await createTenant(deps, {
        domain: tenantDomain(t),
        applicationId,
        settings: {
          emailVerificationWebhook: `${plan.webhookUrl}/verify`,
          passwordResetWebhook: `${plan.webhookUrl}/reset`,
          magicLoginWebhook: `${plan.webhookUrl}/magic`,
          botProtection: { provider: "none" },
          sessionTier: "30d",
        },
      });
      applicationId ??= created.applicationId;
      tenants.push(await findTenantOrThrow(deps, created.domain));
    }
    // Members: `m<i>@` in every tenant, ids unique per tenant anyway.
    for (const tenant of tenants) await insertMembers(db, tenant, 0, plan.membersPerTenant, "m", phc, salt.toString("base64"), now);

    const logins: Seeded["logins"] = [];
    for (let i = 0; i < plan.membersPerTenant; i++) for (const tenant of tenants) logins.push({ domain: tenant.domain, email: `m${i}@bench.example` });

    const sessions: Seeded["sessions"] = [];
    for (let start = 0; start < plan.sessions; start += BATCH) {
      await deps.store.transaction(async (tx) => {
        for (let s = start; s < Math.min(plan.sessions, start + BATCH); s++) {
          const tenant = tenants[s % tenants.length]!;
          const member = Math.floor(s / tenants.length) % plan.membersPerTenant;
          const issued = await createSession(tx, deps, tenant, 100_000_000_000_000 + member, { ip: "198.51.100.7", userAgent: "bench" }, now, {
            amr: ["pwd"],
          });
          sessions.push({ domain: tenant.domain, cookie: issued.sessionId });
        }
      });
    }

    const first = tenants[0]!;
    const tokens = async (count: number, kind: "verify_email" | "magic_login", base: number) => {
      const out: Seeded["verifyTokens"] = [];
      if (count === 0) return out;
      if (kind === "magic_login") await insertMembers(db, first, base, count, "magic", phc, "", now, true);
      else {
        await insertMembers(db, first, base, count, "pending", phc, salt.toString("base64"), now);
        await db
          .updateTable("members")
          .set({ status: "Email Verification Pending", email_verified: 0 })
          .where("tenant_id", "=", first.id)
          .where("email", "like", "pending%")
          .execute();
      }
      for (let start = 0; start < count; start += BATCH) {
        await deps.store.transaction(async (tx) => {
          for (let i = start; i < Math.min(count, start + BATCH); i++) {
            out.push({ domain: first.domain, ...linkParts(await issueOneTimeToken(tx, deps, first, 100_000_000_000_000 + base + i, kind, now)) });
          }
        });
      }
      return out;
    };
    const verifyTokens = await tokens(plan.verifyTokens ?? 0, "verify_email", 10_000_000);
    const magicTokens = await tokens(plan.magicTokens ?? 0, "magic_login", 20_000_000);
    const passkeyLogins = await seedPasskeyLogins(db, first, Math.min(50, plan.membersPerTenant), plan.passkeyLogins ?? 0, now);
    const oidcClient = await seedOidcClient(deps, first, now);
    const passwordChanges = await seedPasswordChanges(db, deps, first, plan.passwordChanges ?? 0, phc, salt.toString("base64"), now);
    const importedLogins = await seedImportedLogins(deps, first, plan.importedPerFormat ?? 0);
    if (plan.upstream) {
      const { issuer, clientId, clientSecret } = plan.upstream;
      await createConnection(deps, first, { id: BENCH_CONNECTION, type: "oidc", displayName: "The bench's provider", issuer, clientId, clientSecret });
    }
    await settle(db, databaseUrl);
    return {
      databaseUrl,
      domains: tenants.map((t) => t.domain),
      logins,
      sessions,
      verifyTokens,
      magicTokens,
      passkeyLogins,
      oidcClient,
      passwordChanges,
      importedLogins,
    };
  } finally {
    await db.destroy();
    reader?.close();
    await deps.store.close();
  }
}
