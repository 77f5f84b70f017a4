/**
 * Delivers outbox rows (contract.md#d9): claims due rows, signs and sends each, and retries failures with
 * exponential backoff for at least 24 h. The webhook-id is the row id, so it is the same on every
 * retry. Rows survive restarts because they live in the store; a crashed sender's lease expires.
 */
import type { Logger } from "pino";
import { MINUTE, type Clock } from "../core/clock.js";
import type { Random } from "../core/random.js";
import {
  WEBHOOK_ATTEMPT_TIMEOUT_MS as ATTEMPT_TIMEOUT_MS,
  WEBHOOK_FIRST_RETRY_MS as FIRST_RETRY_MS,
  WEBHOOK_MAX_RETRY_DELAY_MS as MAX_RETRY_DELAY_MS,
  WEBHOOK_RETRY_FOR_MS as RETRY_FOR_MS,
} from "../rules.js";
import type { Metrics } from "../metrics.js";
import type { SecretBox } from "../security/secret-box.js";
import type { Store } from "../store/index.js";
import type { ClaimedDelivery } from "../store/outbox.js";
import type { SealedWebhookSecrets } from "../store/tenants.js";
import type { ReadinessNotice } from "../store/readiness-notice.js";
import { outsideTransaction } from "../store/transaction-scope.js";
import { sendWebhook } from "./webhook-sender.js";

const LEASE_MS = 2 * MINUTE;
const BATCH = 20;
/** Sending waits 50-300 ms after a wake-up, at random: emails still leave well within a second. */
const SEND_DELAY_MIN_MS = 50;
const SEND_DELAY_SPREAD_MS = 250;

/** Delay before the next attempt: 10 s, 30 s, 90 s, ... capped at 1 h, with ±10 % jitter. */
export function retryDelayMs(attempts: number, random: Random): number {
  const base = Math.min(FIRST_RETRY_MS * 3 ** Math.max(0, attempts - 1), MAX_RETRY_DELAY_MS);
  const jitter = (random.bytes(2).readUInt16BE(0) / 0xffff - 0.5) * 0.2;
  return Math.round(base * (1 + jitter));
}

export interface DispatcherDeps {
  store: Store;
  clock: Clock;
  random: Random;
  secrets: SecretBox;
  log: Logger;
  /** A pass that fails because the database is not ready is that state, said once there, not an error per pass. */
  readiness: ReadinessNotice;
  metrics: Pick<Metrics, "webhookDelivery">;
  allowPrivateNetworks: boolean;
  /**
   * Runs at the start of every pass: turns committed email requests into outbox rows (contract.md#d19), so a
   * wake-up right after their commit sends the email within the same pass.
   */
  beforePass?: () => Promise<unknown>;
}

export class WebhookDispatcher {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;
  private again = false;
  /** Tenant id -> domain, for log lines: a tenant's domain never changes, so an entry never goes stale. */
  private readonly domains = new Map<string, string>();

  constructor(private readonly deps: DispatcherDeps) {}

  /** One pass over the due rows, without the send delay (tests drive it with their own clock); resolves with how many were attempted. */
  async deliverDue(): Promise<number> {
    await this.deps.beforePass?.();
    return this.sendDue();
  }

  /**
   * A wake-up's pass: email requests become rows at once (the same writes for every email, contract.md#d19),
   * then the sending waits a random SEND_DELAY: the HTTP call of a real email (an unknown email has
   * none) must not land on the request that follows the answer (contract.md#issue-13, finding 3).
   */
  private async wakeUpPass(): Promise<number> {
    await this.deps.beforePass?.();
    const delay = SEND_DELAY_MIN_MS + (this.deps.random.bytes(2).readUInt16BE(0) % SEND_DELAY_SPREAD_MS);
    await new Promise((resolve) => setTimeout(resolve, delay));
    return this.sendDue();
  }

  private async sendDue(): Promise<number> {
    const { store, clock } = this.deps;
    const claimed = await store.outbox.claimDueDeliveries(clock.now(), BATCH, LEASE_MS);
    await Promise.all(claimed.map((delivery) => this.attempt(delivery)));
    return claimed.length;
  }

  private async attempt(delivery: ClaimedDelivery): Promise<void> {
    const { store, clock, secrets, log, metrics } = this.deps;
    const attempts = delivery.attempts + 1;
    let result: Awaited<ReturnType<typeof sendWebhook>>;
    // Logs name a tenant by its public id, the domain, as the request log does (docs/operations.md#logs).
    let tenant: string | undefined;
    try {
      // One time for the signatures' choice and the timestamp: the window is judged at SEND time
      // (decisions.md#webhook-secret-rotation), so an event queued before a rotation carries both.
      const sentAt = clock.now();
      const sealed = await store.tenants.findWebhookSecrets(delivery.tenantId, sentAt);
      if (sealed === undefined) {
        // Deleted tenant (contract.md#d23): an event queued by an instance that still had it cached.
        await store.outbox.deleteDelivery(delivery.id);
        log.info({ webhookId: delivery.id }, "webhook dropped: its tenant was deleted");
        return;
      }
      tenant = await this.tenantDomain(delivery.tenantId);
      result = await sendWebhook({
        url: delivery.url,
        secrets: [...this.openPreviousSecret(sealed, delivery, tenant), secrets.open(sealed.current)],
        id: delivery.id,
        timestampSeconds: Math.floor(sentAt / 1000),
        body: secrets.open(delivery.payloadEnc),
        allowPrivateNetworks: this.deps.allowPrivateNetworks,
        timeoutMs: ATTEMPT_TIMEOUT_MS,
      });
    } catch (err) {
      log.error({ err, webhookId: delivery.id, tenant }, "webhook delivery could not be prepared");
      result = { ok: false, error: "internal error" };
    }
    const now = clock.now();
    // Only ids and outcomes are logged: the payload holds a link with a token.
    const logFields = { webhookId: delivery.id, tenant, eventType: delivery.eventType, attempts };
    if (result.ok) {
      await store.outbox.finishDelivery(delivery.id, "delivered", attempts, null, now);
      metrics.webhookDelivery("delivered");
      log.info({ ...logFields, status: result.status }, "webhook delivered");
    } else if (now - delivery.createdAt >= RETRY_FOR_MS) {
      await store.outbox.finishDelivery(delivery.id, "failed", attempts, result.error, now);
      metrics.webhookDelivery("abandoned");
      log.error({ ...logFields, error: result.error }, "webhook delivery abandoned after retries");
    } else {
      await store.outbox.scheduleRetry(delivery.id, attempts, result.error, now + retryDelayMs(attempts, this.deps.random), now);
      metrics.webhookDelivery("retry");
      log.warn({ ...logFields, error: result.error }, "webhook delivery failed, will retry");
    }
  }

  /**
   * The old secret while its rotation window lasts (decisions.md#webhook-secret-rotation). One that no
   * configured key opens is left out, with a warning: the current secret still signs, where failing
   * would hold back every delivery for the rest of the window.
   */
  private openPreviousSecret(sealed: SealedWebhookSecrets, delivery: ClaimedDelivery, tenant: string | undefined): string[] {
    if (!sealed.previous) return [];
    try {
      return [this.deps.secrets.open(sealed.previous.sealed)];
    } catch {
      this.deps.log.warn({ webhookId: delivery.id, tenant }, "the previous webhook secret can't be opened: signed with the current one only");
      return [];
    }
  }

  private async tenantDomain(tenantId: string): Promise<string | undefined> {
    const known = this.domains.get(tenantId);
    if (known !== undefined) return known;
    const domain = (await this.deps.store.tenants.findTenantById(tenantId))?.domain;
    if (domain !== undefined) this.domains.set(tenantId, domain);
    return domain;
  }

  /** Polls every `intervalMs`; notify() wakes it at once after a flow enqueued something. */
  start(intervalMs = 1000): void {
    this.timer ??= setInterval(() => this.notify(), intervalMs);
    this.timer.unref();
  }

  /** No-op until start(): tests drive deliverDue() themselves, with their own clock. */
  notify(): void {
    // A pass is the outer store's work: never inside the scope of a transaction that woke it (contract.md#issue-28).
    outsideTransaction(() => this.wake());
  }

  private wake(): void {
    if (!this.timer) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.wakeUpPass()
      .catch((err: unknown) => this.reportFailedPass(err))
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  /** Not ready (not migrated, not reachable): the readiness notice's one warning; else an error, as any failure. */
  private async reportFailedPass(err: unknown): Promise<number> {
    const { store, readiness, log } = this.deps;
    if (!(await readiness.explainedByDatabase(() => store.isReady(), err))) log.error({ err }, "webhook dispatcher pass failed");
    return 0;
  }

  /** Stops polling and waits for the pass in flight, for a graceful shutdown. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
