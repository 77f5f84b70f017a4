#!/usr/bin/env node
// Where a request's CPU time goes, by stage (contract.md#issue-17): each sample of a V8 .cpuprofile goes to
// the innermost stage on its stack (pino called from the tenant hook counts as logging; anything
// under the PostgreSQL client's frames, its socket's reads and writes included, counts as the store), and the
// time per stage is divided by the requests served. Samples of start-up (module loading, plugin
// boot, schema compilation) and idle time are left out. Usage:
//   node bench/cpuprofile-stages.mjs <file.cpuprofile> <requests served>
import { readFileSync } from "node:fs";

/** First match wins within one frame; a sample takes the innermost frame that matches any stage. */
export const STAGES = [
  ["store read (SQLite snapshot / pg)", (f) => /\/dist\/store\/|better-sqlite3|~\/pg\/|pg-protocol/.test(f.url)],
  ["session rules (flow)", (f) => /\/dist\/flows\/kernel\/sessions\.js/.test(f.url)],
  ["session id hash (SHA-256)", (f) => /\/dist\/security\/hashing\.js/.test(f.url) || /node:internal\/crypto\/hash/.test(f.url)],
  ["tenant lookup, CORS, origin", (f) => /\/dist\/(http\/tenant|store\/tenant-cache)\.js/.test(f.url)],
  [
    "logging (pino, child logger, redaction)",
    (f) =>
      /~?\/(pino|@pinojs|pino-std-serializers|sonic-boom)\//.test(f.url) ||
      /logger-factory\.js|\/dist\/logging\.js|\/dist\/http\/observability\.js/.test(f.url),
  ],
  ["metrics (prom-client)", (f) => /prom-client|\/dist\/metrics\.js/.test(f.url)],
  ["cookie parse and set", (f) => /@fastify\/cookie|\/cookie\/dist\//.test(f.url)],
  ["response serialization", (f) => /fast-json-stringify|serialize/.test(`${f.url} ${f.functionName}`)],
  ["Latch hooks (request id, URL checks)", (f) => /\/dist\/app\.js/.test(f.url)],
  ["route handler (session route)", (f) => /\/dist\/http\//.test(f.url)],
  ["routing (find-my-way)", (f) => /find-my-way/.test(f.url)],
  ["Fastify core (hooks, reply, request)", (f) => /~?\/fastify\/|\/avvio\//.test(f.url)],
  [
    "Node HTTP parse and write",
    (f) =>
      /^node:(_http|net|internal\/streams|internal\/stream_base)/.test(f.url) || ["writev", "writeUtf8String", "writeBuffer", "read"].includes(f.functionName),
  ],
  ["garbage collection", (f) => f.functionName === "(garbage collector)"],
];
const STORE_READ = STAGES[0][0];
const POSTGRES_CLIENT = /~\/(pg|pg-protocol|pg-pool)\//;
const START_UP = /node:internal\/modules|compileSchemasFor|avvio\/lib\/plugin|Boot\._loadPlugin|ajv\/dist\/(core|compile)/;
const IGNORED = new Set(["(idle)", "(program)"]);

export function stagesOf(profile) {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
  const frameOf = (id) => {
    const { functionName, url } = nodes.get(id).callFrame;
    return { functionName, url: url.replace(/.*node_modules\//, "~/") };
  };
  const totals = new Map(STAGES.map(([name]) => [name, 0]));
  totals.set("other", 0);
  let startUp = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    const leaf = frameOf(id);
    if (IGNORED.has(leaf.functionName)) return;
    const stack = [];
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) stack.push(frameOf(cur));
    if (stack.some((f) => START_UP.test(`${f.url} ${f.functionName}`))) {
      startUp += dt;
      return;
    }
    // PostgreSQL's protocol runs on a socket of its own: its reads and writes are Node's net code
    // under pg's frames, and count as the store's, not as HTTP.
    if (stack.some((f) => POSTGRES_CLIENT.test(f.url))) {
      totals.set(STORE_READ, totals.get(STORE_READ) + dt);
      return;
    }
    for (const frame of stack) {
      const stage = STAGES.find(([, matches]) => matches(frame));
      if (stage) {
        totals.set(stage[0], totals.get(stage[0]) + dt);
        return;
      }
    }
    totals.set("other", totals.get("other") + dt);
  });
  return { totals, startUp };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [file, requestsArg] = process.argv.slice(2);
  if (!file || !requestsArg) {
    console.error("usage: node bench/cpuprofile-stages.mjs <file.cpuprofile> <requests served>");
    process.exit(2);
  }
  const requests = Number(requestsArg);
  const { totals } = stagesOf(JSON.parse(readFileSync(file, "utf8")));
  const busy = [...totals.values()].reduce((a, b) => a + b, 0);
  console.log("\n| Stage | µs per request | share |\n|---|---:|---:|");
  for (const [name, t] of [...totals].sort((a, b) => b[1] - a[1]))
    console.log(`| ${name} | ${(t / requests).toFixed(1)} | ${((100 * t) / busy).toFixed(0)} % |`);
  console.log(`| **total CPU on the server's main thread** | **${(busy / requests).toFixed(1)}** | |`);
}
