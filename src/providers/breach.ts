import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Logger } from "pino";

/**
 * Breached-password check (contract.md#d11): the HIBP Pwned Passwords range API, which only ever
 * sees the first 5 hex characters of the password's SHA-1 (k-anonymity), with a shipped list of
 * common passwords as the fallback when the API cannot answer.
 */
export type BreachCheckMode = "remote" | "offline" | "off";

export interface BreachChecker {
  isBreached(password: string): Promise<boolean>;
}

export const DEFAULT_BREACH_CHECK_URL = "https://api.pwnedpasswords.com/range/";

/**
 * tsc does not copy .txt files into dist/, so the list lives at the repo root. `../../` reaches the
 * root from both src/providers/ (tsx) and dist/providers/ (the build mirrors src/ into dist/).
 * Deployments must ship resources/ next to dist/.
 */
export const COMMON_PASSWORDS_FILE = new URL("../../resources/common-passwords.txt", import.meta.url);

const DEFAULT_TIMEOUT_MS = 2000;
/** One range line: the 35 hex characters after the prefix, then how often it was seen. */
const RANGE_LINE = /^([0-9A-F]{35}):(\d+)$/i;

export function createBreachChecker(options: { mode: BreachCheckMode; url: string; timeoutMs?: number; log: Logger }): BreachChecker {
  switch (options.mode) {
    case "off":
      return { isBreached: async () => false };
    case "offline":
      return { isBreached: async (password) => isCommonPassword(password) };
    case "remote":
      return createRemoteBreachChecker(options.url, options.timeoutMs ?? DEFAULT_TIMEOUT_MS, options.log);
    default:
      // Config comes from the environment; an unknown mode must not silently turn the check off.
      throw new Error(`unknown breach check mode: ${String(options.mode)}`);
  }
}

function createRemoteBreachChecker(url: string, timeoutMs: number, log: Logger): BreachChecker {
  const baseUrl = url.endsWith("/") ? url : `${url}/`;
  return {
    async isBreached(password: string): Promise<boolean> {
      const hash = sha1Hex(password);
      const prefix = hash.slice(0, 5);
      try {
        const body = await fetchRange(`${baseUrl}${prefix}`, timeoutMs);
        return rangeHasBreachedSuffix(body, hash.slice(5));
      } catch (err) {
        // Neither the password nor its hash is in `err`: errors here carry only the prefix URL at most.
        log.warn({ err }, "breach check unavailable, using offline list");
        return isCommonPassword(password);
      }
    },
  };
}

/**
 * Hashes the NFKC form, the same form the password hasher stores (contract.md#d12), so a password typed
 * with compatibility characters (e.g. full-width letters) is checked as the secret it really is.
 * NFKC is idempotent: callers that already normalised get the SHA-1 of exactly what they passed.
 */
function sha1Hex(password: string): string {
  return createHash("sha1").update(password.normalize("NFKC"), "utf8").digest("hex").toUpperCase();
}

async function fetchRange(url: string, timeoutMs: number): Promise<string> {
  const response = await fetch(url, {
    // Padding makes every answer a similar size, so response length does not leak the prefix's bucket.
    headers: { "Add-Padding": "true" },
    // A redirect would send the prefix to a host nobody configured.
    redirect: "error",
    // Covers the body too: a server that stalls mid-body still times out.
    signal: AbortSignal.timeout(timeoutMs),
  });
  if (!response.ok) {
    await response.body?.cancel();
    throw new Error(`breach range API answered HTTP ${response.status}`);
  }
  return response.text();
}

/**
 * Every line is validated, not just searched: an HTML error page served with 200 must fall back
 * to the offline list rather than read as "not breached". Count-0 lines are padding, not hits.
 */
function rangeHasBreachedSuffix(body: string, suffix: string): boolean {
  let lineCount = 0;
  let breached = false;
  for (const rawLine of body.split("\n")) {
    const line = rawLine.trim(); // also drops the \r of CRLF
    if (line === "") continue;
    lineCount += 1;
    const match = RANGE_LINE.exec(line);
    // The line itself is not put in the error: it is someone else's hash suffix, and noise in the log.
    if (!match) throw new Error(`malformed breach range response at line ${lineCount}`);
    if (Number(match[2]) > 0 && match[1]!.toUpperCase() === suffix) breached = true;
  }
  // Every prefix has hundreds of entries, so an empty answer means something upstream is broken.
  if (lineCount === 0) throw new Error("empty breach range response");
  return breached;
}

let commonPasswords: Set<string> | undefined;

/** Loaded at first use: off and remote-only deployments never pay for it unless the API fails. */
function isCommonPassword(password: string): boolean {
  commonPasswords ??= loadCommonPasswords();
  return commonPasswords.has(password.normalize("NFKC").toLowerCase());
}

function loadCommonPasswords(): Set<string> {
  const text = readFileSync(COMMON_PASSWORDS_FILE, "utf8");
  const entries = text.split("\n").map((line) => line.trim().normalize("NFKC").toLowerCase());
  return new Set(entries.filter((entry) => entry !== ""));
}
