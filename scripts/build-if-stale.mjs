/**
 * `npm start`'s prestart: build only when the build is missing or older than its sources (issue
 * 16: rebuilding on every start took 11-12 s of a 13 s start). The sources are src/, the
 * tsconfigs and package-lock.json (a dependency change can change the browser bundle); the build
 * is dist/main.js (tsc) and dist/ui/hosted.js (esbuild), and the older of the two counts.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";

const SOURCES = ["src", "tsconfig.json", "tsconfig.build.json", "package-lock.json"];
const OUTPUTS = ["dist/main.js", "dist/ui/hosted.js"];

/** The newest modification time under `path` (a file or a directory), or 0 when it does not exist. */
function newest(path) {
  let stats;
  try {
    stats = statSync(path);
  } catch {
    return 0;
  }
  if (!stats.isDirectory()) return stats.mtimeMs;
  return readdirSync(path).reduce((latest, name) => Math.max(latest, newest(join(path, name))), stats.mtimeMs);
}

function oldestOutput() {
  return Math.min(...OUTPUTS.map((file) => newest(file)));
}

const built = oldestOutput();
const changed = Math.max(...SOURCES.map((path) => newest(path)));
if (built === 0 || changed > built) {
  process.stderr.write(
    built === 0 ? "latch: no build yet: building (npm run build)\n" : "latch: sources changed since the last build: rebuilding (npm run build)\n",
  );
  const result = spawnSync("npm", ["run", "-s", "build"], { stdio: "inherit" });
  process.exit(result.status ?? 1);
}
