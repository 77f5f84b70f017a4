/**
 * The Argon2id bindings side by side: verifies per second of `@node-rs/argon2` (what Latch hashes with,
 * src/security/password.ts) and of the `argon2` package (what it hashed with before), at Latch's
 * parameters (19456 KiB, t=2, p=1, 32-byte salt) and the same concurrency, in one process and one run.
 * Why the choice: dependencies.md#the-argon2id-binding.
 *
 *   [UV_THREADPOOL_SIZE=n] npm run argon2-bindings -w @latch/bench [-- <seconds> <rounds> <concurrency>]
 *
 * Defaults: 5 s per run, 3 rounds, concurrency max(4, cores) as the hash floor's. The bindings run one
 * after the other, never together, alternating each round (so a change in the machine's load falls on
 * both); the median round of each is kept. Each verifies the other's PHC string first: the same hash
 * works with either. Prints one line per run, then the medians and their ratio, then one JSON line.
 * Both run on libuv's thread pool, sized from the environment at launch (4 unless UV_THREADPOOL_SIZE).
 */
import { availableParallelism } from "node:os";
import * as nodeRs from "@node-rs/argon2";
import * as nodeArgon2 from "argon2";
import { verifiesPerSecond } from "./verify-rate.js";

const [seconds = 5, rounds = 3, concurrency = Math.max(4, availableParallelism())] = process.argv.slice(2).map(Number);
if (!(seconds > 0) || !Number.isInteger(rounds) || rounds < 1 || !Number.isInteger(concurrency) || concurrency < 1) {
  console.error("usage: node --import tsx bench/argon2-bindings.ts [seconds] [rounds] [concurrency]");
  process.exit(2);
}

const PASSWORD = "Correct-Horse-Battery-9";
const COST = { memoryCost: 19456, timeCost: 2, parallelism: 1 };
const salt = Buffer.alloc(32, 7);
// @node-rs/argon2 declares its enums `const`, which isolated modules can't read: 2 is Argon2id in its index.d.ts.
const newPhc = await nodeRs.hash(PASSWORD, { ...COST, algorithm: 2 as nodeRs.Algorithm, salt });
const oldPhc = await nodeArgon2.hash(PASSWORD, { ...COST, type: nodeArgon2.argon2id, salt });
if (!(await nodeArgon2.verify(newPhc, PASSWORD)) || !(await nodeRs.verify(oldPhc, PASSWORD))) {
  throw new Error("the bindings do not verify each other's hashes");
}

const bindings: Record<string, (phc: string, password: string) => Promise<boolean>> = {
  "@node-rs/argon2": (phc, password) => nodeRs.verify(phc, password),
  argon2: (phc, password) => nodeArgon2.verify(phc, password),
};
const phcOf: Record<string, string> = { "@node-rs/argon2": newPhc, argon2: oldPhc };

async function measure(name: string): Promise<number> {
  const verify = bindings[name]!;
  const phc = phcOf[name]!;
  return (await verifiesPerSecond(name, () => verify(phc, PASSWORD), seconds, concurrency)).verifiesPerSecond;
}

const runs: Record<string, number[]> = { "@node-rs/argon2": [], argon2: [] };
const threadPool = process.env.UV_THREADPOOL_SIZE ?? "4 (default)";
console.log(`Argon2id m=19456 KiB t=2 p=1, ${concurrency} verifies in flight, UV_THREADPOOL_SIZE=${threadPool}, ${rounds} × ${seconds} s each`);
for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? ["@node-rs/argon2", "argon2"] : ["argon2", "@node-rs/argon2"];
  for (const name of order) {
    const rate = await measure(name);
    runs[name]!.push(rate);
    console.log(`round ${round + 1}: ${name.padEnd(16)} ${rate.toFixed(1)} verifies/s`);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fast = median(runs["@node-rs/argon2"]!);
const slow = median(runs.argon2!);
console.log(`median: @node-rs/argon2 ${fast.toFixed(1)}/s, argon2 ${slow.toFixed(1)}/s, ratio ${(fast / slow).toFixed(2)}×`);
console.log(JSON.stringify({ nodeRsArgon2: fast, argon2: slow, ratio: fast / slow, concurrency, seconds, rounds, threadPool, runs }));
