// The OpenAPI document (issue 7): the served one is the committed one, it covers every public
// route, it is structurally valid OpenAPI 3.1, and the reference page is served from this host.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, test } from "node:test";
import type { RouteOptions } from "fastify";
import { OPENAPI_FILE } from "../scripts/openapi.js";
import { buildApp } from "../src/app.js";
import { assertError, assertLoginRefused } from "./support/assertions.js";
import { createHarness, post, type Harness } from "./support/harness.js";
import { formatFinding, lintWithRedocly, lintWithSpectral, type LintFinding } from "./support/openapi-lint.js";
import { AUDIT_EVENT_TYPES, MemberStatus } from "../src/model.js";
import { EMAIL_ADDRESS_PATTERN, EMAIL_INPUT_PATTERN } from "../src/core/email-address.js";
import { NAME_MAX_LENGTH } from "../src/rules.js";

type Json = Record<string, unknown>;
const HTTP_METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

let h: Harness;
let served: Json;
before(async () => {
  h = await createHarness();
  // No X-Tenant-Domain and an unknown Host: the document and the page are for anyone.
  const response = await h.app.inject({ method: "GET", url: "/openapi.json", headers: { host: "nobody.example.net" } });
  assert.equal(response.statusCode, 200, response.body);
  assert.match(String(response.headers["content-type"]), /^application\/json/);
  served = response.json<Json>();
});
after(() => h.close());

function operationsOf(document: Json): Array<{ path: string; method: string; operation: Json }> {
  const paths = document.paths as Record<string, Json>;
  return Object.entries(paths).flatMap(([path, item]) =>
    HTTP_METHODS.filter((method) => method in item).map((method) => ({ path, method, operation: item[method] as Json })),
  );
}

test("the served /openapi.json is the committed docs/openapi.json", () => {
  const committed = JSON.parse(readFileSync(OPENAPI_FILE, "utf8")) as Json;
  assert.deepStrictEqual(served, committed, "docs/openapi.json is out of date with the routes: run `npm run openapi` and commit the result");
});

test("every public route is in the document with its method, and nothing else is", async () => {
  const routes: RouteOptions[] = [];
  const app = await buildApp(h.deps, { onRoute: (route) => void routes.push(route) });
  await app.ready();
  const document = app.swagger() as unknown as Json;
  await app.close();

  const expected = new Set<string>();
  for (const route of routes) {
    if (route.schema?.hide) continue;
    const path = route.url.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
    for (const method of [route.method].flat()) {
      // Fastify adds a HEAD twin to every GET; the document leaves those out.
      if (method === "HEAD" && routes.some((r) => r.url === route.url && [r.method].flat().includes("GET"))) continue;
      expected.add(`${method.toLowerCase()} ${path}`);
    }
  }
  const documented = new Set(operationsOf(document).map(({ method, path }) => `${method} ${path}`));
  assert.ok(expected.size >= 25, `only ${expected.size} public routes collected`);
  assert.deepStrictEqual(
    [...expected].filter((key) => !documented.has(key)),
    [],
    "public routes missing from the document",
  );
  assert.deepStrictEqual(
    [...documented].filter((key) => !expected.has(key)),
    [],
    "documented operations with no route",
  );
  // The reference page's own routes are registered but hidden.
  assert.ok(
    routes.some((r) => r.url.startsWith("/docs")),
    "the /docs routes are registered",
  );
  assert.ok(!Object.keys(document.paths as Json).some((p) => p.startsWith("/docs") || p === "/openapi.json"), "docs routes are hidden");
});

/** Resolves a local JSON pointer (`#/a/b`) in `document`. */
function resolvePointer(document: Json, ref: string): unknown {
  if (!ref.startsWith("#/")) return undefined;
  let node: unknown = document;
  for (const raw of ref.slice(2).split("/")) {
    const key = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (node === null || typeof node !== "object" || !(key in node)) return undefined;
    node = (node as Json)[key];
  }
  return node;
}

function collectRefs(node: unknown, found: string[] = []): string[] {
  if (Array.isArray(node)) for (const item of node) collectRefs(item, found);
  else if (node !== null && typeof node === "object") {
    for (const [key, value] of Object.entries(node)) {
      if (key === "$ref" && typeof value === "string") found.push(value);
      else collectRefs(value, found);
    }
  }
  return found;
}

test("the document is structurally valid OpenAPI 3.1", () => {
  assert.match(String(served.openapi), /^3\.1\.\d+$/);
  const info = served.info as Json;
  assert.equal(info.title, "Latch");
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
  assert.equal(info.version, pkg.version);

  const components = served.components as Json;
  const schemes = components.securitySchemes as Json;
  const declaredTags = new Set((served.tags as Json[]).map((t) => t.name as string));
  const operationIds = new Set<string>();
  const operations = operationsOf(served);
  assert.ok(operations.length > 0);
  for (const { path, method, operation } of operations) {
    const label = `${method.toUpperCase()} ${path}`;
    assert.ok(path.startsWith("/"), label);
    assert.equal(typeof operation.summary, "string", `${label} has a summary`);
    const tags = operation.tags as string[] | undefined;
    assert.ok(tags && tags.length > 0 && tags.every((t) => declaredTags.has(t)), `${label} has declared tags`);
    assert.equal(typeof operation.operationId, "string", `${label} has an operationId`);
    assert.ok(!operationIds.has(operation.operationId as string), `${label}: operationId is unique`);
    operationIds.add(operation.operationId as string);

    const responses = operation.responses as Record<string, Json> | undefined;
    assert.ok(responses && Object.keys(responses).length > 0, `${label} has responses`);
    assert.ok(
      // A browser navigation's success is its 302 (the federated start and callback), or the 303 of a provider's form post.
      Object.keys(responses).some((status) => /^2\d\d$/.test(status) || status === "302" || status === "303"),
      `${label} documents its success`,
    );
    for (const [status, response] of Object.entries(responses)) {
      assert.match(status, /^([1-5](\d\d|XX)|default)$/, `${label} ${status}`);
      assert.equal(typeof response.description, "string", `${label} ${status} has a description`);
      if (Number(status) >= 400) {
        const schema = (response.content as Record<string, Json>)["application/json"]!.schema as Json;
        assert.equal(schema.$ref, "#/components/schemas/ErrorBody", `${label} ${status} is the D4 error body`);
      }
    }
    // Every {param} of the path template is a required path parameter, and vice versa.
    const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
    const pathParams = ((operation.parameters ?? []) as Json[]).filter((p) => p.in === "path");
    assert.deepStrictEqual(pathParams.map((p) => p.name).sort(), templated.sort(), `${label} path parameters`);
    for (const p of pathParams) assert.equal(p.required, true, `${label} path parameter ${String(p.name)} is required`);
    for (const requirement of (operation.security ?? []) as Json[]) {
      for (const name of Object.keys(requirement)) assert.ok(name in schemes, `${label}: security scheme ${name} is declared`);
    }
    // Every tenant-scoped operation documents the header that names the tenant.
    if (path.startsWith("/auth/")) {
      const item = (served.paths as Record<string, Json>)[path]!;
      assert.deepStrictEqual(item.parameters, [{ $ref: "#/components/parameters/TenantDomain" }], `${label} documents X-Tenant-Domain`);
    }
  }

  const refs = collectRefs(served);
  assert.ok(refs.length > 0);
  for (const ref of new Set(refs)) assert.notEqual(resolvePointer(served, ref), undefined, `$ref ${ref} resolves`);
});

test("the security schemes and the error body are the ones the routes use", () => {
  const components = served.components as Json;
  assert.deepStrictEqual(Object.keys(components.securitySchemes as Json).sort(), ["internalApiKey", "operatorKey", "sessionCookie"]);
  assert.deepStrictEqual((components.securitySchemes as Json).sessionCookie, {
    type: "apiKey",
    in: "cookie",
    name: "session_id",
    description: "The `session_id` cookie a login sets (`HttpOnly; Secure; SameSite=Lax`), valid only for the tenant that set it.",
  });
  const errorBody = (components.schemas as Json).ErrorBody as Json;
  assert.deepStrictEqual(errorBody.required, ["success", "code", "message", "requestId"]);
  assert.equal(errorBody.additionalProperties, true);
  const lock = (served.paths as Record<string, Json>)["/auth/lock-account"]!.post as Json;
  assert.deepStrictEqual(lock.security, [{ internalApiKey: [] }]);
  const login = (served.paths as Record<string, Json>)["/auth/login"]!.post as Json;
  assert.match(String((login.responses as Record<string, Json>)["403"]!.description), /`account_locked`/);
  assert.ok(((login.responses as Record<string, Json>)["429"]!.headers as Json)["Retry-After"], "429 documents Retry-After");
});

test("declared error responses keep every field of the D4 body", async () => {
  const invalid = await post(h, "/auth/login", { email: 42, password: "x" });
  const body = assertLoginRefused(invalid, 400, "validation_failed");
  assert.ok(Array.isArray(body.details) && body.details.length > 0, invalid.body);
  const weak = await post(h, "/auth/register-password", { email: "weak@example.org", name: "Weak", password: "short" });
  assert.deepStrictEqual(assertError(weak, 400, "weak_password").details, ["min_length", "uppercase", "number_or_special"]);
  const locked = await post(h, "/auth/lock-account", { recordId: "1", action: "lock" });
  assert.deepStrictEqual(Object.keys(assertError(locked, 401, "unauthorized")).sort(), ["code", "message", "requestId", "success"]);
});

/** Errors fail the test; warnings are listed in its output. */
async function assertNoLintErrors(t: { diagnostic(message: string): void }, linter: string, findings: LintFinding[]): Promise<void> {
  for (const finding of findings.filter((f) => f.severity !== "error")) t.diagnostic(`${linter}: ${formatFinding(finding)}`);
  assert.deepStrictEqual(findings.filter((f) => f.severity === "error").map(formatFinding), [], `${linter} errors in docs/openapi.json`);
}

test("Spectral (spectral:oas) finds no error in the document", async (t) => {
  await assertNoLintErrors(t, "spectral", await lintWithSpectral(readFileSync(OPENAPI_FILE, "utf8"), OPENAPI_FILE));
});

test("Redocly (recommended rules) finds no error in the document", async (t) => {
  await assertNoLintErrors(t, "redocly", await lintWithRedocly(readFileSync(OPENAPI_FILE, "utf8"), OPENAPI_FILE));
});

test("issue 16: what a client generator and a validating proxy need is in the document", () => {
  const paths = served.paths as Record<string, Record<string, Json>>;
  const body = (path: string, method = "post") =>
    ((paths[path]![method]!.requestBody as Json).content as Record<string, Json>)["application/json"]!.schema as Json;
  const answer = (path: string, method = "get", status = "200") =>
    ((paths[path]![method]!.responses as Record<string, Json>)[status]!.content as Record<string, Json>)["application/json"]!.schema as Json;
  const schemas = (served.components as Json).schemas as Record<string, Json>;

  // 1. logout documents its (optional) body.
  const logout = paths["/auth/logout"]!.post!.requestBody as Json;
  assert.equal(logout.required, false);
  // 2. details: one component, referred to by the one error body every error answer uses.
  assert.deepStrictEqual((schemas.ErrorBody!.properties as Json).details, { $ref: "#/components/schemas/ErrorDetails" });
  assert.ok(schemas.ErrorDetails!.anyOf, "ErrorDetails lists its two forms");
  // 3. enums: authentication_status, an audit event's type.
  const status = (answer("/auth/lock-account", "post").properties as Json).authentication_status as Json;
  assert.deepStrictEqual(status.enum, Object.values(MemberStatus));
  const auditType = ((((answer("/auth/admin/audit-log").properties as Json).events as Json).items as Json).properties as Json).type as Json;
  assert.deepStrictEqual(auditType.enum, [...AUDIT_EVENT_TYPES]);
  // 4. every `limit` is an integer with bounds.
  const limits = Object.values(paths)
    .flatMap((item) => Object.values(item))
    .flatMap((op) => ((op.parameters ?? []) as Json[]).filter((p) => p.name === "limit"));
  assert.equal(limits.length, 4);
  for (const limit of limits)
    assert.deepStrictEqual([(limit.schema as Json).type, (limit.schema as Json).minimum, (limit.schema as Json).maximum], ["integer", 0, 999]);
  // 5. the bot challenge is typed, and so is the field its answer goes in.
  const challenge = answer("/auth/bot-challenge").properties as Json;
  assert.ok(((challenge.parameters as Json).required as string[]).includes("keyPrefix"));
  assert.match(String(((body("/auth/login").properties as Json)["bot-challenge-response"] as Json).description), /ALTCHA/);
  // 6. 2FA disable requires the password or a code.
  assert.deepStrictEqual(
    (body("/auth/2fa/disable").anyOf as Json[]).map((s) => s.required),
    [["password"], ["code"]],
  );
  // 7. email fields say so: the one email rule's pattern (issue 29 replaced `format: email`).
  assert.equal(((body("/auth/login").properties as Json).email as Json).pattern, EMAIL_INPUT_PATTERN);
  // 8. a server.
  assert.ok(Array.isArray(served.servers) && (served.servers as Json[]).length > 0);
  // 9. webhooks, one per event type.
  assert.ok(Object.keys(served.webhooks as Json).length >= 10);
  // 10 and 11: x-request-id on every answer, and security stated on every operation.
  for (const { path, method, operation } of operationsOf(served)) {
    assert.ok(Array.isArray(operation.security), `${method} ${path} states its security`);
    for (const [code, response] of Object.entries(operation.responses as Record<string, Json>)) {
      assert.deepStrictEqual((response.headers as Json)["x-request-id"], { $ref: "#/components/headers/RequestId" }, `${method} ${path} ${code}`);
    }
  }
});

/** Every schema object under `node` that has `key`, with where it is. */
function schemasWith(node: unknown, key: string, at = "#"): Array<{ at: string; schema: Json }> {
  if (Array.isArray(node)) return node.flatMap((item, i) => schemasWith(item, key, `${at}/${i}`));
  if (node === null || typeof node !== "object") return [];
  const here = key in node ? [{ at, schema: node as Json }] : [];
  return [...here, ...Object.entries(node).flatMap(([name, child]) => schemasWith(child, key, `${at}/${name}`))];
}

test("issue 29: the document says what the server does", () => {
  const paths = served.paths as Record<string, Record<string, Json>>;
  // License and contact.
  const info = served.info as Json;
  assert.equal(typeof (info.license as Json).name, "string");
  assert.equal(typeof (info.contact as Json).name, "string");
  // One email rule: no `format: email` anywhere; every email is the input rule or the normalised one.
  assert.deepStrictEqual(
    schemasWith(served, "format").filter(({ schema }) => schema.format === "email"),
    [],
  );
  const emailPatterns = new Set(
    schemasWith(served, "pattern")
      .map(({ schema }) => schema.pattern as string)
      .filter((p) => p.includes("@")),
  );
  assert.deepStrictEqual([...emailPatterns].sort(), [EMAIL_ADDRESS_PATTERN, EMAIL_INPUT_PATTERN].sort());
  // The name's bound is rules.ts's.
  const name = ((paths["/auth/register-password"]!.post!.requestBody as Json).content as Record<string, Json>)["application/json"]!.schema as Json;
  assert.equal(((name.properties as Json).name as Json).maxLength, NAME_MAX_LENGTH);
  // The answers that end the caller's session document the cookie they clear.
  for (const [path, method] of [
    ["/auth/logout", "post"],
    ["/auth/secure-account", "post"],
    ["/auth/delete-account", "post"],
    ["/auth/sessions/{id}", "delete"],
  ] as const) {
    const ok = (paths[path]![method]!.responses as Record<string, Json>)["200"]!;
    assert.match(String(((ok.headers as Json)["Set-Cookie"] as Json)?.description), /session_id=;/, `${method} ${path}`);
  }
  // The router's and Node's answers are on every operation, in the D4 body; 413 and 415 on every method with a body.
  for (const { path, method, operation } of operationsOf(served)) {
    const statuses = Object.keys(operation.responses as Json);
    const expected = ["400", "408", "414", "431", "500", "503", ...(method === "get" ? [] : ["413", "415"])];
    assert.deepStrictEqual(
      expected.filter((status) => !statuses.includes(status)),
      [],
      `${method} ${path}`,
    );
    const unavailable = (operation.responses as Record<string, Json>)["503"]!;
    assert.ok((unavailable.headers as Json)["Retry-After"], `${method} ${path} 503 has Retry-After`);
  }
});

test("/docs serves the reference page and its assets from this host, with no tenant", async () => {
  const page = await h.app.inject({ method: "GET", url: "/docs", headers: { host: "nobody.example.net" } });
  assert.equal(page.statusCode, 200, page.body);
  assert.match(String(page.headers["content-type"]), /^text\/html/);
  assert.match(String(page.headers["content-security-policy"]), /default-src 'self'/);
  const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
  assert.ok(
    assets.some((url) => url.endsWith("swagger-ui-bundle.js")),
    page.body,
  );
  for (const url of assets) {
    assert.ok(url.startsWith("/docs/"), `asset ${url} is served by Latch, not a CDN`);
    const asset = await h.app.inject({ method: "GET", url, headers: { host: "nobody.example.net" } });
    assert.equal(asset.statusCode, 200, `${url}: ${asset.statusCode}`);
  }
  // The page loads the same document as /openapi.json.
  const json = await h.app.inject({ method: "GET", url: "/docs/json" });
  assert.deepStrictEqual(json.json(), served);
});

test("unknown URLs, under /docs too, still get the D4 not_found body", async () => {
  for (const url of ["/docs/static/missing.js", "/docs/nope", "/nope", "/auth/nope"]) {
    const response = await h.app.inject({ method: "GET", url });
    const body = assertError(response, 404, "not_found");
    assert.deepStrictEqual(Object.keys(body).sort(), ["code", "message", "requestId", "success"], url);
  }
  // Tenant resolution is unchanged: /auth routes still need a known tenant.
  const unknown = await post(h, "/auth/forgot-password", { email: "a@example.org" }, { domain: "unknown.example.com" });
  assertError(unknown, 404, "unknown_tenant");
});
