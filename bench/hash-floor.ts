/**
 * Hash floor: how many Argon2id verifies per second this machine does with Latch's parameters
 * (src/security/password.ts DEFAULT_ARGON2), i.e. the ceiling on password logins per second.
 *
 *   [UV_THREADPOOL_SIZE=n] node --import tsx bench/hash-floor.ts <seconds> <concurrency>
 *
 * Keeps <concurrency> verify calls in flight for <seconds> and prints one JSON line. The binding is
 * `@node-rs/argon2`, the fastest one measured (bench/argon2-bindings.ts) and the one Latch uses, so
 * the login's ratio to this floor measures Latch and not its hash library
 * (dependencies.md#the-argon2id-binding). It runs on libuv's thread pool, whose size only takes effect
 * from the environment at launch (an ES module cannot set it in-process), so the caller passes
 * UV_THREADPOOL_SIZE.
 */
import { randomBytes } from "node:crypto";
import { hash, verify, type Algorithm } from "@node-rs/argon2";
import { verifiesPerSecond } from "./verify-rate.js";

const seconds = Number(process.argv[2]);
const concurrency = Number(process.argv[3]);
if (!(seconds > 0) || !Number.isInteger(concurrency) || concurrency < 1) {
  console.error("usage: node --import tsx bench/hash-floor.ts <seconds> <concurrency>");
  process.exit(2);
}

const password = "Correct-Horse-Battery-9";
// 2 is Argon2id (the binding's `const enum`, which isolated modules can't read); a 32-byte salt as Latch's.
const phc = await hash(password, { algorithm: 2 as Algorithm, memoryCost: 19456, timeCost: 2, parallelism: 1, salt: randomBytes(32) });

const rate = await verifiesPerSecond("@node-rs/argon2", () => verify(phc, password), seconds, concurrency);

console.log(
  JSON.stringify({
    ...rate,
    threadPool: process.env.UV_THREADPOOL_SIZE ?? "4 (default)",
    binding: "@node-rs/argon2",
  }),
);
