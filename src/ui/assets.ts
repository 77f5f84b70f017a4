/**
 * The hosted pages' static files, each at a fixed URL under /ui/assets/ (no directory listing, no
 * path from the request reaches the file system): the stylesheet, the page script built by
 * `npm run build:ui`, and the ALTCHA widget's "external" build (JS, CSS, proof-of-work workers)
 * from node_modules. Files are resolved once, when the routes are registered.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { FastifyInstance } from "fastify";
import type { Deps } from "../deps.js";
import { HOSTED_CSS } from "./style.js";

interface Asset {
  type: string;
  /** The file's content; undefined when it was missing at start (the route answers 404). */
  body: string | undefined;
}

function readAsset(file: string | URL, deps: Deps): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch {
    deps.log.warn({ file: String(file) }, "a hosted-page asset is missing: run `npm run build:ui` (or `npm ci`)");
    return undefined;
  }
}

function resolvePackageFile(specifier: string): URL {
  return new URL(import.meta.resolve(specifier));
}

const JS = "text/javascript; charset=utf-8";
const CSS = "text/css; charset=utf-8";

export function loadAssets(deps: Deps): Record<string, Asset> {
  const altchaDir = new URL(".", resolvePackageFile("altcha/external"));
  const workerDir = new URL(".", resolvePackageFile("altcha/workers/sha"));
  return {
    "hosted.css": { type: CSS, body: HOSTED_CSS },
    // Built from src/ui/browser/hosted.ts; from src/ui (tsx) and dist/ui (tsc) alike, ../../dist/ui.
    "hosted.js": { type: JS, body: readAsset(fileURLToPath(new URL("../../dist/ui/hosted.js", import.meta.url)), deps) },
    "altcha.js": { type: JS, body: readAsset(new URL("altcha.min.js", altchaDir), deps) },
    "altcha.css": { type: CSS, body: readAsset(new URL("altcha.css", altchaDir), deps) },
    "altcha-worker-pbkdf2.js": { type: JS, body: readAsset(new URL("pbkdf2.js", workerDir), deps) },
    "altcha-worker-sha.js": { type: JS, body: readAsset(new URL("sha.js", workerDir), deps) },
  };
}

export async function hostedAssetRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  for (const [name, asset] of Object.entries(loadAssets(deps))) {
    app.get(`/ui/assets/${name}`, { schema: { hide: true } }, async (_request, reply) => {
      if (asset.body === undefined) return reply.code(404).type("text/plain; charset=utf-8").send("Not found");
      return (
        reply
          .type(asset.type)
          // Not versioned by name: a short cache, so a new build shows within minutes.
          .header("cache-control", "public, max-age=300")
          .header("x-content-type-options", "nosniff")
          .send(asset.body)
      );
    });
  }
}
