/**
 * `npm run check:package`: the client SDK's package shape, checked on the tarball a user would get
 * (docs/dependencies.md#development-devdependencies). `attw --pack` ran `npm pack` inside
 * packages/client and deleted the tarball only when it got to the end: a failed or interrupted check
 * left `latch-client-<version>.tgz` in the checkout, untracked. Here the tarball is written to a
 * temporary directory, which is removed however the checks end.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const client = join(root, "packages", "client");
const bin = (name) => join(root, "node_modules", ".bin", name);

/** Runs a command with its output shown; its exit status, or 1 when it could not run. */
function run(command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: "inherit", ...options });
  if (result.error) console.error(`check:package: ${command} could not run: ${result.error.message}`);
  return result.status ?? 1;
}

function checkPackage(temp) {
  // `npm pack` runs the package's prepack (the build), so the tarball holds what a user would install.
  const packed = spawnSync("npm", ["pack", "--json", "--pack-destination", temp], { cwd: client, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  if (packed.status !== 0) {
    console.error(`check:package: npm pack failed (exit ${packed.status})`);
    return 1;
  }
  const [{ filename }] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf("[")));
  const attw = run(bin("attw"), [join(temp, filename), "--format", "ascii"]);
  // publint packs by itself, with `npm pack --dry-run`: it writes no file.
  const publint = run(bin("publint"), [client, "--strict"]);
  return attw !== 0 ? attw : publint;
}

const temp = mkdtempSync(join(tmpdir(), "latch-check-package-"));
try {
  process.exitCode = checkPackage(temp);
} finally {
  rmSync(temp, { recursive: true, force: true });
}
