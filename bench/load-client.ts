/**
 * For the benchmark orchestrator: runLoad(spec) runs load.ts in its own Node process (so the load
 * generator never competes with the caller's event loop) and resolves with its LoadResult.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { LoadResult, LoadSpec } from "./load-types.js";

export type { LoadRequest, LoadResult, LoadSpec } from "./load-types.js";

const repoRoot = fileURLToPath(new URL("../", import.meta.url));
const loadScript = fileURLToPath(new URL("./load.ts", import.meta.url));

/** Rejects with load.ts's stderr if it exits non-zero (e.g. an invalid spec) or prints no result. */
export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const dir = await mkdtemp(join(tmpdir(), "latch-load-"));
  try {
    const specFile = join(dir, "spec.json");
    await writeFile(specFile, JSON.stringify(spec));
    const child = spawn(process.execPath, ["--import", "tsx", loadScript, specFile], { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once("error", reject);
      child.once("close", resolve);
    });
    const line = stdout.trim().split("\n").at(-1) ?? "";
    if (code !== 0 || !line.startsWith("{")) {
      throw new Error(`bench/load.ts exited with ${code}: ${stderr.trim() || stdout.trim() || "no output"}`);
    }
    return JSON.parse(line) as LoadResult;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
