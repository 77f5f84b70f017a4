// The SDK as a user gets it (issue 16): `npm pack` of packages/client, the tarball installed offline
// into a directory outside the repository, then plain `node app.mjs` (no tsx, no TypeScript) and a
// `require()` use it against a real Latch on a real port, and a TypeScript consumer type-checks
// against the shipped .d.ts. The package once exported ./src/index.ts, which only tsx could load.
// Issue 29: `require` gets a CommonJS build of its own (dist/cjs/), and the Express example of the
// README (packages/client/examples/express.mjs) runs in a node:http server against the real Latch.
import assert from "node:assert/strict";
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { AddressInfo } from "node:net";
import { createLatchClient } from "../packages/client/src/index.js";
import { lastWebhookFor } from "./support/flows.js";
import { createHarness, deliverWebhooks, parseLink, STRONG_PASSWORD, type Harness } from "./support/harness.js";

const run = promisify(execFile);
const CLIENT_DIR = fileURLToPath(new URL("../packages/client/", import.meta.url));
const TSC = createRequire(import.meta.url).resolve("typescript/bin/tsc");

let h: Harness;
let baseUrl: string;
let temp: string;
/** The user's project: a package.json, node_modules/@latch/client from the tarball, and the files below. */
let app: string;
let installed: string;

/**
 * The child's environment: no NODE_OPTIONS, so nothing like tsx's loader reaches `node app.mjs`, and no
 * npm_config_* inherited from an `npm test` around us, so npm reads the temp project's settings only.
 */
function plainEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of Object.keys(env)) if (name === "NODE_OPTIONS" || name.toLowerCase().startsWith("npm_config_")) delete env[name];
  return env;
}

before(async () => {
  temp = mkdtempSync(join(tmpdir(), "latch-client-package-"));
  app = join(temp, "app");
  mkdirSync(app);
  // `npm pack` runs the package's prepack, which builds dist/ with tsc: the tarball is what a user would get.
  const packed = await run("npm", ["pack", "--json", "--pack-destination", temp], { cwd: CLIENT_DIR, env: plainEnv() });
  const [{ filename }] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf("["))) as [{ filename: string }];
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "latch-client-user", private: true, type: "module" }));
  // The package has no dependencies, so the install needs no registry.
  await run("npm", ["install", "--offline", "--no-audit", "--no-fund", join(temp, filename)], { cwd: app, env: plainEnv() });
  installed = join(app, "node_modules", "@latch", "client");

  h = await createHarness();
  await h.app.listen({ port: 0, host: "127.0.0.1" });
  baseUrl = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
});
after(async () => {
  await h?.close();
  if (temp) rmSync(temp, { recursive: true, force: true });
});

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)))
    .sort();
}

/** Every path string in an `exports` value, however deeply the conditions nest. */
function exportTargets(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (value === null || typeof value !== "object") return [];
  return Object.values(value).flatMap(exportTargets);
}

test("the installed tarball has an ES module and a CommonJS build with declarations for every source file, and exports point only at them", () => {
  const files = filesUnder(installed);
  const modules = readdirSync(join(CLIENT_DIR, "src"))
    .filter((name) => name.endsWith(".ts"))
    .map((name) => name.slice(0, -3));
  assert.ok(modules.includes("index"));
  for (const dir of ["dist", "dist/cjs"]) {
    for (const module of modules) {
      assert.ok(files.includes(`${dir}/${module}.js`), `${dir}/${module}.js is not in the tarball: ${files.join(", ")}`);
      assert.ok(files.includes(`${dir}/${module}.d.ts`), `${dir}/${module}.d.ts is not in the tarball`);
    }
  }
  // Without it the package's "type": "module" would make dist/cjs/*.js ES modules again.
  assert.deepEqual(JSON.parse(readFileSync(join(installed, "dist/cjs/package.json"), "utf8")), { type: "commonjs" });

  const manifest = JSON.parse(readFileSync(join(installed, "package.json"), "utf8")) as { exports: Record<string, unknown>; main: string; types: string };
  const main = manifest.exports["."] as Record<string, Record<string, string>>;
  // TypeScript takes the first condition it knows, so `types` comes first in each branch.
  assert.deepEqual(main, {
    import: { types: "./dist/index.d.ts", default: "./dist/index.js" },
    require: { types: "./dist/cjs/index.d.ts", default: "./dist/cjs/index.js" },
  });
  for (const branch of Object.values(main)) assert.equal(Object.keys(branch)[0], "types");
  // For resolvers that predate `exports` (TypeScript's node10, old bundlers): the CommonJS build.
  assert.equal(manifest.main, "./dist/cjs/index.js");
  assert.equal(manifest.types, "./dist/cjs/index.d.ts");
  for (const target of exportTargets(manifest.exports)) {
    assert.ok(target === "./package.json" || target.startsWith("./dist/"), `exports names ${target}, outside dist`);
    assert.ok(!/(?<!\.d)\.ts$/.test(target), `exports names TypeScript source ${target}`);
    assert.ok(files.includes(target.slice(2)), `exports names ${target}, which is not in the tarball`);
  }
});

/** Plain Node, no loader: log in with the memory cookie jar, read the session, log out, see the refusal. */
const APP_MJS = `
import { createLatchClient, isLatchError, LatchError } from "@latch/client";

const [baseUrl, tenantDomain, email, password] = process.argv.slice(2);
const latch = createLatchClient({ baseUrl, tenantDomain, cookies: "memory" });
const login = await latch.loginWithPassword({ email, password });
const session = await latch.getSession();
await latch.logout();
let refusal;
try {
  await latch.getSession();
} catch (err) {
  refusal = { isLatchError: isLatchError(err, "unauthorized"), instance: err instanceof LatchError, code: err.code, status: err.status };
}
console.log(JSON.stringify({ resolved: import.meta.resolve("@latch/client"), login, session, refusal }));
`;

/**
 * CommonJS: require() gets the CommonJS build; an ES module import in the same process gets the other
 * copy, and an error of one is still a LatchError to the other (the dual-package hazard).
 */
const APP_CJS = `
const { createLatchClient, isLatchError, LATCH_ERROR_CODES, LatchError } = require("@latch/client");
(async () => {
  const esm = await import("@latch/client");
  const error = await createLatchClient({ baseUrl: process.argv[2], tenantDomain: process.argv[3] }).getSession().catch((err) => err);
  console.log(JSON.stringify({
    resolved: require.resolve("@latch/client"),
    client: typeof createLatchClient().getSession,
    codes: LATCH_ERROR_CODES.length,
    twoCopies: esm.LatchError !== LatchError,
    code: error.code,
    instanceOfCjs: error instanceof LatchError && isLatchError(error, "unauthorized"),
    instanceOfEsm: error instanceof esm.LatchError && esm.isLatchError(error, "unauthorized"),
    plainErrorIsNot: new Error("x") instanceof esm.LatchError,
  }));
})();
`;

async function registerVerified(email: string): Promise<string> {
  const client = createLatchClient({ baseUrl, tenantDomain: h.tenant.domain });
  const { recordid } = await client.registerWithPassword({ email, name: "Ada Lovelace", password: STRONG_PASSWORD });
  await deliverWebhooks(h);
  await client.verifyEmail(parseLink(lastWebhookFor(h, "verify_email", email).body.verificationLink!));
  return recordid;
}

test("a plain .mjs outside the repository imports the installed @latch/client and uses it against Latch", async () => {
  const email = "package-user@example.com";
  const recordId = await registerVerified(email);
  writeFileSync(join(app, "app.mjs"), APP_MJS);

  const { stdout } = await run(process.execPath, ["app.mjs", baseUrl, h.tenant.domain, email, STRONG_PASSWORD], { cwd: app, env: plainEnv() });
  const result = JSON.parse(stdout) as { resolved: string; login: { authorized: boolean; recordid: string }; session: { recordId: string }; refusal: unknown };
  assert.equal(fileURLToPath(result.resolved), join(installed, "dist", "index.js"), "resolved from the installed tarball's dist");
  assert.equal(result.login.authorized, true);
  assert.equal(result.login.recordid, recordId);
  assert.equal(result.session.recordId, recordId, "the memory cookie jar kept the session");
  assert.deepEqual(result.refusal, { isLatchError: true, instance: true, code: "unauthorized", status: 401 });
});

test("require('@latch/client') loads the CommonJS build, whose errors the ES module copy also knows as LatchErrors", async () => {
  writeFileSync(join(app, "app.cjs"), APP_CJS);
  const { stdout } = await run(process.execPath, ["app.cjs", baseUrl, h.tenant.domain], { cwd: app, env: plainEnv() });
  const result = JSON.parse(stdout) as Record<string, unknown>;
  assert.equal(result.resolved, join(installed, "dist", "cjs", "index.js"));
  assert.equal(result.client, "function");
  assert.ok((result.codes as number) > 10);
  assert.deepEqual(
    {
      twoCopies: result.twoCopies,
      code: result.code,
      instanceOfCjs: result.instanceOfCjs,
      instanceOfEsm: result.instanceOfEsm,
      plainErrorIsNot: result.plainErrorIsNot,
    },
    { twoCopies: true, code: "unauthorized", instanceOfCjs: true, instanceOfEsm: true, plainErrorIsNot: false },
  );
});

/**
 * A consumer of the published types. The @ts-expect-error lines make the check two-sided: if the
 * declarations were missing or `any`, those lines would not be errors and tsc would fail on them.
 */
const CONSUMER_TS = `
import { createLatchClient, isLatchError, LATCH_ERROR_CODES, type LatchClient, type LatchErrorCode, type LoginWithPasswordRequest } from "@latch/client";

const latch: LatchClient = createLatchClient({ baseUrl: "https://auth.example.com", tenantDomain: "shop.example.com", cookies: "memory" });
const request: LoginWithPasswordRequest = { email: "ada@example.com", password: "a password" };

export async function signIn(): Promise<string | undefined> {
  try {
    const answer = await latch.loginWithPassword(request);
    return answer.authorized ? answer.recordid : answer.message;
  } catch (err) {
    if (isLatchError(err, "rate_limited")) return String(err.retryAfterSeconds ?? err.status);
    throw err;
  }
}
export const codes: readonly LatchErrorCode[] = LATCH_ERROR_CODES;

// @ts-expect-error the email is a string
void latch.loginWithPassword({ email: 42, password: "a password" });
// @ts-expect-error no such error code
isLatchError(new Error("x"), "no_such_code");
// @ts-expect-error no such method
void latch.noSuchMethod();
export async function readToken(): Promise<string> {
  const answer = await latch.loginWithPassword(request);
  // @ts-expect-error a login answer has no 'sessionToken'
  return answer.sessionToken;
}
`;

/**
 * The consumer's settings: a browser app (DOM), a Node app (@types/node, no DOM), a bundler's
 * resolution, and a CommonJS file (.cts), which must get the CommonJS build's declarations.
 */
const CONSUMERS: Record<string, Record<string, unknown>> = {
  "NodeNext with DOM": { module: "NodeNext", moduleResolution: "NodeNext", lib: ["ES2022", "DOM"], types: [] },
  "NodeNext with @types/node, no DOM": {
    module: "NodeNext",
    moduleResolution: "NodeNext",
    lib: ["ES2022"],
    types: ["node"],
    typeRoots: [fileURLToPath(new URL("../node_modules/@types", import.meta.url))],
  },
  "Bundler resolution": { module: "ESNext", moduleResolution: "Bundler", lib: ["ES2022", "DOM"], types: [] },
  "NodeNext, a CommonJS file": { module: "NodeNext", moduleResolution: "NodeNext", lib: ["ES2022", "DOM"], types: [] },
};

test("a TypeScript consumer type-checks against the shipped .d.ts, not the sources", async () => {
  writeFileSync(join(app, "consumer.ts"), CONSUMER_TS);
  writeFileSync(join(app, "consumer.cts"), CONSUMER_TS);
  for (const [name, options] of Object.entries(CONSUMERS)) {
    const config = `tsconfig.${name.replace(/\W+/g, "-")}.json`;
    const commonJs = name.includes("CommonJS");
    // skipLibCheck off: the declarations themselves are checked too, against only these libraries.
    const compilerOptions = { target: "ES2022", strict: true, noEmit: true, skipLibCheck: false, ...options };
    writeFileSync(join(app, config), JSON.stringify({ compilerOptions, files: [commonJs ? "consumer.cts" : "consumer.ts"] }));
    const checked = await run(process.execPath, [TSC, "-p", config, "--listFiles"], { cwd: app, env: plainEnv() }).catch((err: { stdout: string }) => {
      assert.fail(`${name}: the consumer does not type-check:\n${err.stdout}`);
    });
    const fromPackage = checked.stdout.split("\n").filter((file) => file.includes("node_modules/@latch/client/"));
    const declarations = commonJs ? "/dist/cjs/index.d.ts" : "/dist/index.d.ts";
    assert.ok(
      fromPackage.some((file) => file.endsWith(declarations)),
      `${name}: ${declarations} was not used: ${fromPackage.join(", ")}`,
    );
    assert.deepEqual(
      fromPackage.filter((file) => !file.endsWith(".d.ts")),
      [],
      `${name}: TypeScript read the package's sources`,
    );
  }
});

/**
 * What Express does with `app.get(path, ...handlers)`, in node:http: each handler's next() calls
 * the one after it, next(err) ends in a 500. Express itself is not a dependency of Latch.
 */
const SERVER_MJS = `
import { createServer } from "node:http";
import { createLatch, logout, requireMember } from "./express.mjs";

const latch = createLatch();
const chain = (...handlers) => (req, res) => {
  const step = (i, err) => {
    if (err) {
      res.statusCode = 500;
      res.end();
    } else handlers[i](req, res, (next) => step(i + 1, next));
  };
  step(0);
};
const routes = {
  "GET /account": chain(requireMember(latch), (req, res) => res.end(JSON.stringify({ recordId: req.member.recordId }))),
  "POST /logout": chain(logout(latch)),
};
const server = createServer((req, res) => routes[req.method + " " + req.url](req, res));
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
`;

test("the README's Express middleware (examples/express.mjs) lets a signed-in browser in, refuses others with 401, and passes logout's Set-Cookie on", async (t) => {
  const email = "express-user@example.com";
  const recordId = await registerVerified(email);
  copyFileSync(join(CLIENT_DIR, "examples", "express.mjs"), join(app, "express.mjs"));
  writeFileSync(join(app, "server.mjs"), SERVER_MJS);
  const server: ChildProcess = spawn(process.execPath, ["server.mjs"], {
    cwd: app,
    env: { ...plainEnv(), LATCH_URL: baseUrl, LATCH_TENANT: h.tenant.domain },
    stdio: ["ignore", "pipe", "inherit"],
  });
  t.after(() => server.kill());
  const [port] = (await once(server.stdout!, "data")) as [Buffer];
  const appUrl = `http://127.0.0.1:${String(port).trim()}`;

  // The browser signed in at Latch (a hosted page, or the SDK in the page): it holds session_id.
  const login = await fetch(`${baseUrl}/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-tenant-domain": h.tenant.domain },
    body: JSON.stringify({ email, password: STRONG_PASSWORD }),
  });
  const sessionCookie = login.headers.getSetCookie()[0]!.split(";")[0]!;
  const browser = (path: string, method = "GET", cookie?: string) => fetch(`${appUrl}${path}`, { method, headers: cookie ? { cookie } : {} });

  assert.equal((await browser("/account")).status, 401, "no cookie");
  const account = await browser("/account", "GET", `theme=dark; ${sessionCookie}`);
  assert.equal(account.status, 200);
  assert.deepEqual(await account.json(), { recordId });

  const out = await browser("/logout", "POST", sessionCookie);
  assert.equal(out.status, 204);
  assert.match(out.headers.getSetCookie()[0] ?? "", /^session_id=;.*(Max-Age=0|Expires=Thu, 01 Jan 1970)/i, "Latch's clearing cookie reached the browser");
  const signedOut = await browser("/account", "GET", sessionCookie);
  assert.equal(signedOut.status, 401);
  assert.deepEqual(await signedOut.json(), { error: "sign_in_required" });
});
