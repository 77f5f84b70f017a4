/**
 * Hash floor: how many Argon2id verifies per second this machine does with Latch's parameters
 * (src/security/password.ts DEFAULT_ARGON2), i.e. the ceiling on password logins per second.
 *
 *   [UV_THREADPOOL_SIZE=n] node --import tsx bench/hash-floor.ts <seconds> <concurrency>
 *
 * Keeps <concurrency> argon2.verify calls in flight for <seconds> and prints one JSON line.
 * argon2 runs on libuv's thread pool, whose size only takes effect from the environment at
 * launch (an ES module cannot set it in-process), so the caller passes UV_THREADPOOL_SIZE.
 */
import { argon2id, hash, verify } from "argon2";

const seconds = Number(process.argv[2]);
const concurrency = Number(process.argv[3]);
if (!(seconds > 0) || !Number.isInteger(concurrency) || concurrency < 1) {
  console.error("usage: node --import tsx bench/hash-floor.ts <seconds> <concurrency>");
  process.exit(2);
}

const password = "Correct-Horse-Battery-9";
const phc = await hash(password, { type: argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1 });

let count = 0;
const startedAt = performance.now();
const deadline = startedAt + seconds * 1000;
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (performance.now() < deadline) {
      if (!(await verify(phc, password))) throw new Error("verify returned false");
      count++;
    }
  }),
);
const elapsed = (performance.now() - startedAt) / 1000;

console.log(
  JSON.stringify({
    verifiesPerSecond: count / elapsed,
    count,
    seconds: elapsed,
    threadPool: process.env.UV_THREADPOOL_SIZE ?? "4 (default)",
  }),
);
