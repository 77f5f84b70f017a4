#!/usr/bin/env node
/**
 * The operator CLI (contract.md#d3, contract.md#d23): `latch tenant list|create|show|update|delete|rotate-key|rotate-webhook-secret|deliveries`,
 * `latch secrets reseal` and `latch migrate`. It calls the same functions as the operator API, on the configured database.
 * stdout carries the result as JSON and nothing else (contract.md#d23), so `latch … | jq` works; usage, errors
 * (as JSON: code, message, details) and logs go to stderr.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import pino from "pino";
import { ConfigError, loadConfig, StartError } from "../config.js";
import { createDeps } from "../create-deps.js";
import type { Deps } from "../deps.js";
import { isAuthError } from "../errors.js";
import {
  createTenant,
  deleteTenant,
  listTenants,
  listWebhookDeliveries,
  rotateApplicationKey,
  rotateWebhookSecret,
  showTenant,
  updateTenantSettings,
} from "../flows/tenants/tenants.js";
import { createLogger } from "../logging.js";
import { describeDuration, WEBHOOK_SECRET_ROTATION_WINDOW_MS } from "../rules.js";
import { checkDatabaseLocation } from "../start-up.js";
import { hasUnreadable, resealSecrets } from "./reseal.js";

const USAGE = `Usage:
  latch tenant list [--limit <n>] [--cursor <nextCursor>]
  latch tenant create --domain <host> (--settings '<json>' | --settings-file <path>) [--application-id <id>]
  latch tenant show <domain>
  latch tenant update <domain> (--settings '<json>' | --settings-file <path>)
  latch tenant delete <domain> --confirm <domain>
  latch tenant rotate-key <applicationId>
  latch tenant rotate-webhook-secret <domain>
      (the old secret signs too for ${describeDuration(WEBHOOK_SECRET_ROTATION_WINDOW_MS)}, until the answer's previousSecretExpiresAt)
  latch tenant deliveries <domain>
  latch secrets reseal
  latch migrate
Configuration comes from the environment (DATABASE_URL, SECRETS_KEY, ...), as for the server.
DATABASE_URL defaults to sqlite:./data/latch.db; dev mode's database is sqlite:./data/dev.db.
The result is JSON on stdout and nothing else; this text, errors and logs go to stderr.`;

type Values = {
  domain?: string;
  settings?: string;
  "settings-file"?: string;
  "application-id"?: string;
  confirm?: string;
  limit?: string;
  cursor?: string;
  help?: boolean;
};

function settingsFrom(values: Values): unknown {
  const text = values["settings-file"] !== undefined ? readFileSync(values["settings-file"], "utf8") : values.settings;
  if (text === undefined) throw new UsageError("--settings or --settings-file is required");
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError("the settings are not valid JSON");
  }
}

class UsageError extends Error {}

function need(value: string | undefined, what: string): string {
  if (!value) throw new UsageError(`${what} is required`);
  return value;
}

async function runTenantCommand(deps: Deps, command: string | undefined, arg: string | undefined, values: Values): Promise<unknown> {
  switch (command) {
    case "list":
      if (values.limit !== undefined && !/^[0-9]{1,3}$/.test(values.limit)) throw new UsageError("--limit must be a number");
      return listTenants(deps, { limit: values.limit === undefined ? undefined : Number(values.limit), cursor: values.cursor });
    case "delete":
      return deleteTenant(deps, need(arg, "<domain>"), need(values.confirm, "--confirm <domain>"));
    case "create":
      return createTenant(deps, { domain: need(values.domain, "--domain"), applicationId: values["application-id"], settings: settingsFrom(values) as never });
    case "show":
      return showTenant(deps, need(arg, "<domain>"));
    case "update":
      return updateTenantSettings(deps, need(arg, "<domain>"), settingsFrom(values) as never);
    case "rotate-key":
      return rotateApplicationKey(deps, need(arg, "<applicationId>"));
    case "rotate-webhook-secret":
      return rotateWebhookSecret(deps, need(arg, "<domain>"));
    case "deliveries":
      return listWebhookDeliveries(deps, need(arg, "<domain>"));
    case undefined: // `latch tenant` alone
    default:
      throw new UsageError(`unknown tenant command: ${command ?? "(none)"}`);
  }
}

/** Prints counts per kind, never a value; exits 1 when something could not be opened. */
async function runSecretsCommand(deps: Deps, command: string | undefined): Promise<number> {
  if (command !== "reseal") throw new UsageError(`unknown secrets command: ${command ?? "(none)"}`);
  const report = await resealSecrets(deps);
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  if (!hasUnreadable(report)) return 0;
  process.stderr.write('latch: some sealed values open with neither SECRETS_KEY nor SECRETS_KEY_PREVIOUS; they were left in place (see "unreadable")\n');
  return 1;
}

function parseCommandLine(argv: string[]): { values: Values; positionals: string[] } | undefined {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        domain: { type: "string" },
        settings: { type: "string" },
        "settings-file": { type: "string" },
        "application-id": { type: "string" },
        confirm: { type: "string" },
        limit: { type: "string" },
        cursor: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (err) {
    // An unknown or incomplete option: a usage error, not a stack trace.
    process.stderr.write(`latch: ${(err as Error).message}\n${USAGE}\n`);
    return undefined;
  }
}

export async function runCli(argv: string[]): Promise<number> {
  const parsed = parseCommandLine(argv);
  if (!parsed) return 2;
  const { values, positionals } = parsed;
  const [group, command, arg] = positionals;
  if (values.help || !group) {
    process.stderr.write(`${USAGE}\n`);
    return values.help ? 0 : 2;
  }
  let deps: Deps | undefined;
  try {
    const config = loadConfig();
    // Only `latch migrate` and `tenant create` may create a database: another command on a file that is not there was meant for another one.
    const database = checkDatabaseLocation(config.databaseUrl, {
      mayCreate: group === "migrate" || (group === "tenant" && command === "create"),
      besideDevDatabase: false,
    });
    if (database.isNew) process.stderr.write(`latch: creating a new, empty database: ${database.description}\n`);
    deps = await createDeps(config, {
      log: createLogger(config.logLevel === "info" ? "warn" : config.logLevel, pino.destination(2)),
      migrate: group === "migrate" || undefined,
    });
    if (group === "migrate") {
      process.stdout.write(`${JSON.stringify({ migrated: true })}\n`);
      return 0; // createDeps ran the migrations
    }
    if (group === "secrets") return await runSecretsCommand(deps, command);
    if (group !== "tenant") throw new UsageError(`unknown command: ${group}`);
    const result = await runTenantCommand(deps, command, arg, values);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } catch (err) {
    if (err instanceof UsageError) process.stderr.write(`latch: ${err.message}\n${USAGE}\n`);
    else if (err instanceof ConfigError) process.stderr.write(`${err.message}\n`);
    else if (err instanceof StartError) process.stderr.write(`latch: ${err.message}\n`);
    else if (isAuthError(err))
      process.stderr.write(
        `${JSON.stringify({ success: false, code: err.code, message: err.message, ...(err.details !== undefined && { details: err.details }) }, null, 2)}\n`,
      );
    else throw err;
    return err instanceof UsageError ? 2 : 1;
  } finally {
    await deps?.store.close();
    await deps?.redis?.close();
  }
}

process.exitCode = await runCli(process.argv.slice(2));
