/**
 * The store: small per-need stores over one Kysely handle. `transaction` hands the same stores
 * bound to a transaction, so a flow writes its state change, token and outbox row atomically.
 */
import type { Kysely } from "kysely";
import type { Database } from "./schema.js";
import { DAY } from "../core/clock.js";
import { DEFAULT_AUDIT_RETENTION_DAYS, LAST_SEEN_RESOLUTION_MS, ORIGIN_MEMORY_MS, REGISTRATION_MEMORY_MS, RETENTION_MS } from "../rules.js";
import { AuditStore } from "./audit.js";
import { isMigrated } from "./database.js";
import type { DialectName, HotReader } from "./dialects.js";
import type { SubjectHasher } from "../security/hashing.js";
import { LimitStore } from "./limits.js";
import { MemberStore } from "./members.js";
import { OutboxStore } from "./outbox.js";
import { SessionTouches } from "./session-touches.js";
import { SessionStore } from "./sessions.js";
import { TenantStore } from "./tenants.js";
import { TokenStore } from "./tokens.js";
import { inTransactionScope } from "./transaction-scope.js";
import { TwoFactorStore } from "./two-factor.js";
import { LoginOriginStore } from "./login-origins.js";
import { EmailRequestStore } from "./email-requests.js";
import { RegistrationStore } from "./registrations.js";
import { PasskeyStore } from "./passkeys.js";
import { FederationStore } from "./federation.js";
import { ConnectionStore } from "./connections.js";
import { OauthStore } from "./oauth.js";
import { OauthClientStore } from "./oauth-clients.js";
import { SigningKeyStore } from "./signing-keys.js";
import { ImportStore } from "./imports.js";

/** Retention (contract.md#d25): every number in rules.ts. */
const DEFAULT_AUDIT_RETENTION_MS = DEFAULT_AUDIT_RETENTION_DAYS * DAY;

export class Store {
  readonly tenants: TenantStore;
  readonly members: MemberStore;
  readonly sessions: SessionStore;
  readonly tokens: TokenStore;
  readonly limits: LimitStore;
  readonly outbox: OutboxStore;
  readonly audit: AuditStore;
  readonly twoFactor: TwoFactorStore;
  readonly loginOrigins: LoginOriginStore;
  readonly registrations: RegistrationStore;
  readonly emailRequests: EmailRequestStore;
  readonly passkeys: PasskeyStore;
  readonly federation: FederationStore;
  readonly connections: ConnectionStore;
  readonly oauth: OauthStore;
  readonly oauthClients: OauthClientStore;
  readonly signingKeys: SigningKeyStore;
  readonly imports: ImportStore;

  constructor(
    private readonly db: Kysely<Database>,
    readonly dialect: DialectName,
    /** The hot reads' own path (dialects.ts HotReader): the root store only, never a transaction's. */
    private readonly reader: HotReader | undefined,
    /** contract.md#d25: how emails are keyed in lockout rows (a keyed hash, from SECRETS_KEY). */
    private readonly subjects: SubjectHasher,
    /** `last_seen_at` written behind: made by the root store (deps.ts passes one that logs a failed write), shared with its transactions' stores. */
    private readonly touches: SessionTouches = new SessionTouches(db, () => undefined, LAST_SEEN_RESOLUTION_MS),
  ) {
    this.tenants = new TenantStore(db, dialect);
    this.members = new MemberStore(db, dialect);
    this.sessions = new SessionStore(db, reader, touches);
    this.tokens = new TokenStore(db, dialect);
    this.limits = new LimitStore(db, subjects);
    this.outbox = new OutboxStore(db, dialect);
    this.audit = new AuditStore(db);
    this.twoFactor = new TwoFactorStore(db, dialect);
    this.loginOrigins = new LoginOriginStore(db);
    this.registrations = new RegistrationStore(db);
    this.emailRequests = new EmailRequestStore(db);
    this.passkeys = new PasskeyStore(db);
    this.federation = new FederationStore(db);
    this.connections = new ConnectionStore(db);
    this.oauth = new OauthStore(db);
    this.oauthClients = new OauthClientStore(db);
    this.signingKeys = new SigningKeyStore(db);
    this.imports = new ImportStore(db);
  }

  /**
   * No network and no password hashing inside: the transaction holds the write lock (habit 7).
   * Inside, only `tx` reaches the database: the outer store throws there (transaction-scope.ts).
   */
  transaction<T>(work: (store: Store) => Promise<T>): Promise<T> {
    return this.db.transaction().execute((trx) => inTransactionScope(() => work(new Store(trx, this.dialect, undefined, this.subjects, this.touches))));
  }

  /**
   * Deletes what has expired so tables stay bounded under a spray of requests. Finished webhook
   * deliveries and idle lockout records are kept for RETENTION_MS, audit events for
   * `auditRetentionMs`, then forgotten.
   */
  async sweepExpired(now: number, auditRetentionMs = DEFAULT_AUDIT_RETENTION_MS): Promise<void> {
    await this.sessions.deleteExpiredSessions(now);
    await this.tokens.deleteExpiredTokens(now);
    await this.passkeys.deleteExpiredChallenges(now);
    await this.federation.deleteExpired(now);
    await this.oauth.deleteExpired(now);
    await this.registrations.deleteExpiredRegistrations(now - REGISTRATION_MEMORY_MS);
    await this.limits.deleteExpiredCounters(now);
    await this.limits.deleteIdleLockouts(now - RETENTION_MS, now);
    await this.outbox.deleteFinishedDeliveries(now - RETENTION_MS);
    await this.loginOrigins.deleteOriginsNotSeenSince(now - ORIGIN_MEMORY_MS);
    await this.audit.deleteAuditEventsBefore(now - auditRetentionMs);
    await this.tenants.deleteExpiredPreviousWebhookSecrets(now);
    await this.signingKeys.deleteExpiredKeys(now);
  }

  /** Readiness: the database answers and every migration has run. */
  async isReady(): Promise<boolean> {
    await this.db.selectFrom("tenants").select("id").limit(1).execute();
    return isMigrated(this.db);
  }

  /** Writes what is kept in memory (sessions' last-seen times) now; close() does it too. */
  flushPending(): Promise<void> {
    return this.touches.flush();
  }

  async close(): Promise<void> {
    await this.touches.flush();
    await this.db.destroy();
    this.reader?.close();
  }
}
