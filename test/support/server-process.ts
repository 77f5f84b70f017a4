/**
 * Latch as a real child process, for the tests that need what only a process does: signals, the
 * start-up log, several instances on one database, a browser talking to a real port. One place
 * spawns it and waits for pino's "Server listening at" line, so every such test fails the same
 * clear way (with the output) when the process exits early or never listens.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import type { Harness } from "./harness.js";

const LISTENING = /Server listening at (http:\/\/127\.0\.0\.1:(\d+))/;
const DEFAULT_TIMEOUT_MS = 30_000;

export interface ServerProcessOptions {
  /** The file `node --import tsx` runs; src/main.ts unless told (src/dev/main.ts for dev mode). */
  entry?: string;
  /** The whole environment of the child (spread process.env yourself when you want it). */
  env: NodeJS.ProcessEnv;
  /** A line that must also have been printed, after the listening line, before the process counts as ready. */
  readyPattern?: RegExp;
  /** How long start-up may take before the start fails; 30 s (tsx compiles on a busy machine). */
  timeoutMs?: number;
}

export interface ServerProcess {
  /** http://127.0.0.1:<port>, from the listening line. */
  url: string;
  port: number;
  child: ChildProcess;
  /** Every line printed so far, stdout and stderr, in arrival order. */
  output(): string[];
  /** The lines printed on stderr alone (pino logs to stdout: a quiet process prints none here). */
  errorOutput(): string[];
  /** Resolves with the first line (already printed or still to come) matching `pattern`. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** SIGTERM (or `signal`), then the exit code; idempotent. SIGKILL if it has not exited after 10 s. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export async function startServerProcess(options: ServerProcessOptions): Promise<ServerProcess> {
  const entry = options.entry ?? "src/main.ts";
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const child = spawn(process.execPath, ["--import", "tsx", entry], { env: options.env, stdio: ["ignore", "pipe", "pipe"] });
  const lines: string[] = [];
  const errorLines: string[] = [];
  const waiters = new Set<{ pattern: RegExp; resolve(line: string): void }>();
  const onLine = (line: string) => {
    lines.push(line);
    for (const waiter of waiters) {
      if (waiter.pattern.test(line)) {
        waiters.delete(waiter);
        waiter.resolve(line);
      }
    }
  };
  // Both streams are always read, so a chatty process never blocks on a full pipe.
  createInterface({ input: child.stdout }).on("line", onLine);
  createInterface({ input: child.stderr }).on("line", (line) => {
    errorLines.push(line);
    onLine(line);
  });
  const exited = once(child, "exit").then(([code, signal]) => ({ code: code as number | null, signal: signal as NodeJS.Signals | null }));
  let exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  void exited.then((info) => (exitInfo = info));

  const describe = () => `${entry}\n--- its output ---\n${lines.join("\n")}\n--- end of output ---`;
  const waitForLine = (pattern: RegExp, waitMs = timeoutMs): Promise<string> => {
    const seen = lines.find((line) => pattern.test(line));
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise<string>((resolve, reject) => {
      const waiter = {
        pattern,
        resolve: (line: string) => {
          clearTimeout(timer);
          resolve(line);
        },
      };
      const timer = setTimeout(() => {
        waiters.delete(waiter);
        reject(new Error(`no line matching ${pattern} within ${waitMs} ms from ${describe()}`));
      }, waitMs);
      waiters.add(waiter);
      void exited.then(({ code, signal }) => {
        if (!waiters.delete(waiter)) return;
        clearTimeout(timer);
        reject(new Error(`the process exited (code ${code}, signal ${signal}) before printing a line matching ${pattern}: ${describe()}`));
      });
    });
  };

  const stop = async (signal: NodeJS.Signals = "SIGTERM"): Promise<number | null> => {
    if (exitInfo) return exitInfo.code;
    child.kill(signal);
    const killer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    const { code } = await exited;
    clearTimeout(killer);
    return code;
  };

  try {
    const listening = LISTENING.exec(await waitForLine(LISTENING))!;
    if (options.readyPattern) await waitForLine(options.readyPattern);
    return { url: listening[1]!, port: Number(listening[2]), child, output: () => [...lines], errorOutput: () => [...errorLines], waitForLine, stop };
  } catch (err) {
    await stop("SIGKILL");
    throw err;
  }
}

/**
 * Another Latch process on the harness's database (and secrets key), with the harness's test
 * settings (offline breach check, webhooks to loopback allowed) and `env` besides: a second
 * instance of the same service.
 */
export function startInstanceOn(h: Harness, env: Record<string, string> = {}): Promise<ServerProcess> {
  return startServerProcess({
    env: {
      ...process.env,
      ...env,
      DATABASE_URL: h.config.databaseUrl,
      SECRETS_KEY: "11".repeat(32),
      PORT: "0",
      HOST: "127.0.0.1",
      LOG_LEVEL: "info",
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
      BREACH_CHECK_MODE: "offline",
    },
  });
}

/**
 * Node's own warnings among a process's lines: `(node:<pid>) [DEP0040] DeprecationWarning: …`,
 * `(node:<pid>) ExperimentalWarning: …`, a MaxListenersExceededWarning. No supported runtime may
 * print one (issue 29, docs/operations.md#supported-runtimes): an operator reads it as something
 * to fix, and a deprecated API that a dependency calls stops working in a later Node.
 */
export function nodeWarnings(lines: readonly string[]): string[] {
  return lines.filter((line) => /^\(node:\d+\) (?:\[[A-Z]+\d+\] )?\w*Warning: /.test(line));
}

/** `env` with Node's warnings shown, whatever the caller's environment silences (NODE_NO_WARNINGS, --no-warnings). */
export function withNodeWarningsShown(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const shown = { ...env };
  delete shown.NODE_NO_WARNINGS;
  if (shown.NODE_OPTIONS !== undefined) {
    shown.NODE_OPTIONS = shown.NODE_OPTIONS.split(/\s+/)
      .filter((option) => !/^--(?:no-warnings|no-deprecation)(?:=|$)/.test(option))
      .join(" ");
  }
  return shown;
}
