/**
 * npm run openapi: writes docs/openapi.json, the OpenAPI document the app serves at /openapi.json,
 * generated from the routes' own schemas. The app is built on a throwaway SQLite store and never
 * listens. Keys are sorted and the indent is 2 spaces, so a diff shows only real changes.
 * test/openapi.test.ts fails when the routes and the committed file drift apart.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildApp } from "../src/app.js";
import { loadConfig } from "../src/config.js";
import { createDeps } from "../src/create-deps.js";

export const OPENAPI_FILE = fileURLToPath(new URL("../docs/openapi.json", import.meta.url));

/** JSON with every object's keys sorted (arrays keep their order), 2-space indent, trailing newline. */
export function stableJson(value: unknown): string {
  const sortKeys = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(sortKeys);
    if (node === null || typeof node !== "object") return node;
    return Object.fromEntries(Object.keys(node).sort().map((key) => [key, sortKeys((node as Record<string, unknown>)[key])]));
  };
  return JSON.stringify(sortKeys(value), null, 2) + "\n";
}

async function writeOpenApiDocument(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), "latch-openapi-"));
  try {
    const config = loadConfig({
      DATABASE_URL: `sqlite:${join(dataDir, "latch.db")}`,
      SECRETS_KEY: "00".repeat(32),
      BREACH_CHECK_MODE: "off",
      LOG_LEVEL: "silent",
    });
    const deps = await createDeps(config);
    try {
      const app = await buildApp(deps);
      await app.ready();
      const json = stableJson(app.swagger());
      await app.close();
      writeFileSync(OPENAPI_FILE, json);
      console.log(`wrote ${OPENAPI_FILE} (${Buffer.byteLength(json)} bytes)`);
    } finally {
      await deps.store.close();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await writeOpenApiDocument();
