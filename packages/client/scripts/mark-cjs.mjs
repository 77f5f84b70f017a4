// Marks dist/cjs/ as CommonJS: without its own package.json, the package's "type": "module" would
// make Node load dist/cjs/*.js as ES modules and TypeScript read dist/cjs/*.d.ts as ESM declarations.
import { writeFileSync } from "node:fs";
import { URL } from "node:url";

writeFileSync(new URL("../dist/cjs/package.json", import.meta.url), `${JSON.stringify({ type: "commonjs" })}\n`);
