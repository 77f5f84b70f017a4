#!/usr/bin/env node
// Summarises a V8 .cpuprofile (from `node --cpu-prof`): the functions with the most self time,
// then the most inclusive time, as percentages of all samples. Usage:
//   node bench/cpuprofile-top.mjs <file.cpuprofile> [count] [filter-regex]
import { readFileSync } from "node:fs";

const [file, countArg = "30", filterArg] = process.argv.slice(2);
if (!file) {
  console.error("usage: node bench/cpuprofile-top.mjs <file.cpuprofile> [count] [filter-regex]");
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, "utf8"));
const count = Number(countArg);
const filter = filterArg ? new RegExp(filterArg) : /./;
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
const label = (n) => {
  const { functionName, url, lineNumber } = n.callFrame;
  return `${functionName || "(anonymous)"} ${url.replace(/.*node_modules\//, "~/").replace(/^file:\/\/.*?\/(dist|src|bench)\//, "$1/")}:${lineNumber + 1}`;
};
const sampled = new Map();
let total = 0;
profile.samples.forEach((id, i) => {
  const dt = profile.timeDeltas[i] ?? 0;
  sampled.set(id, (sampled.get(id) ?? 0) + dt);
  total += dt;
});
const self = new Map();
const inclusive = new Map();
for (const [id, t] of sampled) {
  const key = label(nodes.get(id));
  self.set(key, (self.get(key) ?? 0) + t);
  const seen = new Set();
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
    const k = label(nodes.get(cur));
    if (seen.has(k)) continue;
    seen.add(k);
    inclusive.set(k, (inclusive.get(k) ?? 0) + t);
  }
}
const print = (title, map) => {
  console.log(`\n${title}`);
  for (const [k, t] of [...map]
    .filter(([k]) => filter.test(k))
    .sort((a, b) => b[1] - a[1])
    .slice(0, count))
    console.log(`${((100 * t) / total).toFixed(1).padStart(6)} %  ${k}`);
};
print("self time", self);
print("inclusive time", inclusive);
