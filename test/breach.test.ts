import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { Writable } from "node:stream";
import { after, before, beforeEach, describe, test } from "node:test";
import { pino, type Logger } from "pino";
import { createBreachChecker, type BreachCheckMode } from "../src/providers/breach.js";
import { closedPortUrl, listenOnLoopback } from "./support/local-servers.js";

// Not in the offline list, so only the remote answer can flag it.
const BREACHED_REMOTELY = "Remote-Only-Breach#2024";
// Its suffix appears in the answer, but only as a count-0 padding line: not breached.
const PADDING_ONLY = "Padding-Only-Secret#42";
const STRONG = "vX9#qL2m!Tz7@pR4-unlisted";
// In the offline list (lowercased form of a policy-passing password).
const COMMON = "Password123";

function sha1Hex(value: string): string {
  return createHash("sha1").update(value, "utf8").digest("hex").toUpperCase();
}

type Behaviour = "hibp" | "hibp-lf-lowercase" | "500" | "garbage" | "hang";

/** A local HIBP range server: it records every request and answers with padded lines. */
interface SeenRequest {
  path: string;
  headers: IncomingHttpHeaders;
}

const seen: SeenRequest[] = [];
let behaviour: Behaviour = "hibp";
let server: Server;
let rangeUrl: string;

function rangeLines(prefix: string): string[] {
  const lines: string[] = [];
  // Filler padding first, so a hit is never simply the first line.
  for (let i = 0; i < 20; i += 1) lines.push(`${sha1Hex(`filler-${prefix}-${i}`).slice(5)}:0`);
  const entries: Array<[string, number]> = [
    [BREACHED_REMOTELY, 3861],
    [PADDING_ONLY, 0],
  ];
  for (const [password, count] of entries) {
    const hash = sha1Hex(password);
    if (hash.startsWith(prefix)) lines.push(`${hash.slice(5)}:${count}`);
  }
  lines.push(`${sha1Hex(`tail-${prefix}`).slice(5)}:12`);
  return lines;
}

before(async () => {
  server = createServer((request, response) => {
    const path = request.url ?? "";
    seen.push({ path, headers: request.headers });
    const prefix = path.split("/").pop() ?? "";
    switch (behaviour) {
      case "hibp":
        return void response.writeHead(200, { "content-type": "text/plain" }).end(rangeLines(prefix).join("\r\n"));
      case "hibp-lf-lowercase":
        return void response.writeHead(200).end(`${rangeLines(prefix).join("\n").toLowerCase()}\n`);
      case "500":
        return void response.writeHead(500).end("oops");
      case "garbage":
        return void response.writeHead(200, { "content-type": "text/html" }).end("<html>maintenance</html>");
      case "hang":
        return; // never answers: only the client's timeout ends this
    }
  });
  rangeUrl = `${await listenOnLoopback(server)}/range/`;
});

after(() => {
  server.closeAllConnections();
  server.close();
});

let logLines: string[] = [];

function captureLogger(): Logger {
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      logLines.push(
        ...chunk
          .toString("utf8")
          .split("\n")
          .filter((line) => line !== ""),
      );
      callback();
    },
  });
  return pino({}, stream);
}

function checker(mode: BreachCheckMode, options: { url?: string; timeoutMs?: number } = {}) {
  return createBreachChecker({ mode, url: options.url ?? rangeUrl, timeoutMs: options.timeoutMs, log: captureLogger() });
}

const FALLBACK_MESSAGE = "breach check unavailable, using offline list";

function fallbackWarnings(): Array<Record<string, unknown>> {
  return logLines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((entry) => entry.level === 40 && entry.msg === FALLBACK_MESSAGE);
}

/** No request and no log line ever carries a tested password or its full hash. */
function assertNothingLeaked(): void {
  const passwords = [BREACHED_REMOTELY, PADDING_ONLY, STRONG, COMMON, "password"];
  const secrets = passwords.flatMap((p) => [p, sha1Hex(p), sha1Hex(p).toLowerCase(), sha1Hex(p).slice(5)]);
  const requestText = JSON.stringify(seen);
  const logText = logLines.join("\n");
  for (const secret of secrets) {
    assert.ok(!requestText.includes(secret), "a request carried a password or hash");
    assert.ok(!logText.includes(secret), "the log carried a password or hash");
  }
}

beforeEach(() => {
  seen.length = 0;
  logLines = [];
  behaviour = "hibp";
});

describe("remote mode (HIBP range API)", () => {
  test("detects a breached password and sends only a 5-hex prefix with Add-Padding", async () => {
    assert.equal(await checker("remote").isBreached(BREACHED_REMOTELY), true);
    assert.equal(seen.length, 1);
    assert.match(seen[0]!.path, /^\/range\/[0-9A-F]{5}$/);
    assert.equal(seen[0]!.path, `/range/${sha1Hex(BREACHED_REMOTELY).slice(0, 5)}`);
    assert.equal(seen[0]!.headers["add-padding"], "true");
    assert.deepEqual(fallbackWarnings(), []);
    assertNothingLeaked();
  });

  test("a safe password is not breached", async () => {
    assert.equal(await checker("remote").isBreached(STRONG), false);
    assert.equal(seen.length, 1);
    assert.match(seen[0]!.path, /^\/range\/[0-9A-F]{5}$/);
    assert.deepEqual(fallbackWarnings(), []);
    assertNothingLeaked();
  });

  test("a count-0 padding line with our own suffix is not a breach", async () => {
    const hash = sha1Hex(PADDING_ONLY);
    assert.ok(rangeLines(hash.slice(0, 5)).includes(`${hash.slice(5)}:0`), "fixture must contain the padding line");
    assert.equal(await checker("remote").isBreached(PADDING_ONLY), false);
    assert.deepEqual(fallbackWarnings(), []);
  });

  test("LF line endings and lowercase suffixes are understood", async () => {
    behaviour = "hibp-lf-lowercase";
    const remote = checker("remote");
    assert.equal(await remote.isBreached(BREACHED_REMOTELY), true);
    assert.equal(await remote.isBreached(PADDING_ONLY), false);
    assert.deepEqual(fallbackWarnings(), []);
  });

  test("a URL without a trailing slash gets one", async () => {
    const remote = checker("remote", { url: rangeUrl.slice(0, -1) });
    assert.equal(await remote.isBreached(BREACHED_REMOTELY), true);
    assert.match(seen[0]!.path, /^\/range\/[0-9A-F]{5}$/);
  });
});

describe("remote mode falls back to the offline list", () => {
  const cases: Array<{ name: string; behaviour: Behaviour; timeoutMs?: number }> = [
    { name: "server answers 500", behaviour: "500" },
    { name: "server answers a malformed 200 body", behaviour: "garbage" },
    { name: "server never answers (timeout)", behaviour: "hang", timeoutMs: 200 },
  ];
  for (const testCase of cases) {
    test(testCase.name, async () => {
      behaviour = testCase.behaviour;
      const remote = checker("remote", { timeoutMs: testCase.timeoutMs ?? 2000 });
      assert.equal(await remote.isBreached(COMMON), true);
      assert.equal(await remote.isBreached("password"), true);
      assert.equal(await remote.isBreached(STRONG), false);
      // The remote-only breach is unknown offline: the fallback really is the list, not a cached answer.
      assert.equal(await remote.isBreached(BREACHED_REMOTELY), false);
      assert.equal(seen.length, 4);
      assert.equal(fallbackWarnings().length, 4);
      assertNothingLeaked();
    });
  }

  test("connection refused falls back too", async () => {
    const remote = checker("remote", { url: `${await closedPortUrl()}/range/` });
    assert.equal(await remote.isBreached(COMMON), true);
    assert.equal(fallbackWarnings().length, 1);
    assertNothingLeaked();
  });
});

describe("offline and off modes", () => {
  test("offline checks only the shipped list and makes no HTTP request", async () => {
    const offline = checker("offline");
    assert.equal(await offline.isBreached("password"), true);
    assert.equal(await offline.isBreached(COMMON), true);
    assert.equal(await offline.isBreached("P@ssw0rd!"), true);
    // NFKC: full-width letters are the same password once normalised.
    assert.equal(await offline.isBreached("ｐａｓｓｗｏｒｄ"), true);
    assert.equal(await offline.isBreached(STRONG), false);
    assert.equal(await offline.isBreached(BREACHED_REMOTELY), false);
    assert.equal(seen.length, 0);
    assert.deepEqual(logLines, []);
  });

  test("off never reports a breach, even for 'password', and makes no request", async () => {
    const off = checker("off");
    assert.equal(await off.isBreached("password"), false);
    assert.equal(await off.isBreached("123456"), false);
    assert.equal(seen.length, 0);
  });
});
