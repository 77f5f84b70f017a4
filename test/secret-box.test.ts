/**
 * The secret box's formats and key rotation (decisions, "Storage of secrets and counters"): v2 names
 * its key by an id that reveals nothing of it, v1 values from before still open, previous keys only
 * open; and the validation of SECRETS_KEY_PREVIOUS.
 */
import assert from "node:assert/strict";
import { createCipheriv } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createDeps } from "../src/create-deps.js";
import { createLogger } from "../src/logging.js";
import { ConfigError, loadConfig } from "../src/config.js";
import { cryptoRandom } from "../src/core/random.js";
import { createSecretBox, isSealed, keyId } from "../src/security/secret-box.js";

const KEY_A = Buffer.alloc(32, 0xa1);
const KEY_B = Buffer.alloc(32, 0xb2);
const KEY_C = Buffer.alloc(32, 0xc3);

/** A value exactly as the v1 box (before key ids) sealed it. */
function sealV1(key: Buffer, plaintext: string): string {
  const iv = Buffer.alloc(12, 7);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  const data = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return ["v1", iv, data, cipher.getAuthTag()].map((p) => (typeof p === "string" ? p : p.toString("base64url"))).join(".");
}

test("new seals are v2.<kid>.<iv>.<ciphertext>.<tag> under the current key, recognised by isSealed", () => {
  const box = createSecretBox(KEY_B, cryptoRandom, [KEY_A]);
  const sealed = box.seal("whsec_abc");
  const [version, kid, iv, , tag] = sealed.split(".");
  assert.equal(version, "v2");
  assert.equal(kid, keyId(KEY_B), "the current key, never a previous one");
  assert.equal(Buffer.from(iv!, "base64url").length, 12);
  assert.equal(Buffer.from(tag!, "base64url").length, 16);
  assert.ok(isSealed(sealed));
  assert.ok(isSealed(sealV1(KEY_A, "x")), "v1 stays recognised");
  assert.ok(isSealed(box.seal("")), "an empty plaintext too");
  assert.ok(!isSealed("0x4AAAAAAA-turnstile-secret") && !isSealed("v2.short.x.y.z"));
  assert.equal(box.open(sealed), "whsec_abc");
  assert.ok(box.isSealedWithCurrentKey(sealed));
});

test("a v1 value from before key ids opens with the current key or any previous one", () => {
  assert.equal(createSecretBox(KEY_A, cryptoRandom).open(sealV1(KEY_A, "before")), "before");
  const rotated = createSecretBox(KEY_B, cryptoRandom, [KEY_C, KEY_A]);
  assert.equal(rotated.open(sealV1(KEY_A, "sealed under A")), "sealed under A");
  assert.equal(rotated.open(sealV1(KEY_B, "sealed under B")), "sealed under B");
  assert.ok(!rotated.isSealedWithCurrentKey(sealV1(KEY_B, "x")), "v1 is always re-sealed, to gain a kid");
  assert.throws(() => createSecretBox(KEY_B, cryptoRandom).open(sealV1(KEY_A, "x")), /any configured key/);
});

test("a v2 value opens by its kid; without that key it fails, and tampering is detected", () => {
  const underA = createSecretBox(KEY_A, cryptoRandom).seal("totp-secret");
  const rotated = createSecretBox(KEY_B, cryptoRandom, [KEY_A]);
  assert.equal(rotated.open(underA), "totp-secret");
  assert.ok(!rotated.isSealedWithCurrentKey(underA));
  assert.throws(() => createSecretBox(KEY_B, cryptoRandom).open(underA), /any configured key/);
  // The kid picks the key: the same ciphertext labelled with another configured key's id fails.
  const relabelled = underA.replace(`.${keyId(KEY_A)}.`, `.${keyId(KEY_B)}.`);
  assert.throws(() => rotated.open(relabelled));
  const parts = underA.split(".");
  parts[3] = Buffer.from("tampered").toString("base64url");
  assert.throws(() => rotated.open(parts.join(".")));
  assert.throws(() => rotated.open("v3.AAAA"), /Malformed/);
});

test("the key id names the key without revealing it", () => {
  const ids = [KEY_A, KEY_B, KEY_C, Buffer.alloc(32, 0)].map(keyId);
  assert.equal(new Set(ids).size, ids.length, "different keys, different ids");
  assert.equal(keyId(Buffer.from(KEY_A)), keyId(KEY_A), "stable across processes");
  for (const key of [KEY_A, KEY_B, KEY_C]) {
    const id = keyId(key);
    assert.match(id, /^[A-Za-z0-9_-]{8}$/);
    for (const form of [key.toString("hex"), key.toString("base64url"), key.toString("base64")]) {
      assert.ok(!form.startsWith(id) && !form.includes(id), "the id is no part of the key's text");
    }
  }
});

test("deriveSecret stays on the current key (ALTCHA secrets change with SECRETS_KEY)", () => {
  const before = createSecretBox(KEY_A, cryptoRandom).deriveSecret("altcha-challenge");
  const during = createSecretBox(KEY_B, cryptoRandom, [KEY_A]).deriveSecret("altcha-challenge");
  assert.notEqual(during, before);
  assert.equal(during, createSecretBox(KEY_B, cryptoRandom).deriveSecret("altcha-challenge"));
});

test("SECRETS_KEY_PREVIOUS: comma-separated keys, each 32 bytes, never the current key", () => {
  const env = { SECRETS_KEY: KEY_B.toString("hex") };
  assert.deepEqual(loadConfig(env).secretsKeyPrevious, []);
  const config = loadConfig({ ...env, SECRETS_KEY_PREVIOUS: ` ${KEY_A.toString("hex")} , ${KEY_C.toString("base64")}` });
  assert.deepEqual(config.secretsKeyPrevious, [KEY_A, KEY_C]);

  const problemsOf = (previous: string): string[] => {
    try {
      loadConfig({ ...env, SECRETS_KEY_PREVIOUS: previous });
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      return err.problems;
    }
    return [];
  };
  const badHex = "zz".repeat(32);
  const bad = problemsOf(`${KEY_A.toString("hex")},${badHex}`);
  assert.deepEqual(bad, ["SECRETS_KEY_PREVIOUS (key 2) must be 32 bytes, as 64 hex characters or base64"]);
  assert.ok(!bad.join().includes(badHex), "the value is not echoed");
  assert.equal(problemsOf("abcd").length, 1, "too short");
  assert.match(problemsOf(KEY_B.toString("hex")).join(), /must not contain SECRETS_KEY itself/);
  assert.match(problemsOf(`${KEY_A.toString("hex")},${KEY_B.toString("base64")}`).join(), /must not contain SECRETS_KEY itself/, "in any form");
});

test("SQLite with the generated key file: SECRETS_KEY_PREVIOUS equal to that key is refused at start", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "latch-keyfile-"));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  writeFileSync(join(dataDir, "secrets.key"), `${KEY_A.toString("hex")}\n`);
  const config = loadConfig({ DATABASE_URL: `sqlite:${join(dataDir, "latch.db")}`, SECRETS_KEY_PREVIOUS: KEY_A.toString("hex") });
  await assert.rejects(
    createDeps(config, { log: createLogger("silent") }),
    (err) => err instanceof ConfigError && /must not contain the current key/.test(err.message),
  );
  const rotated = await createDeps(loadConfig({ DATABASE_URL: `sqlite:${join(dataDir, "latch.db")}`, SECRETS_KEY_PREVIOUS: KEY_C.toString("hex") }), {
    log: createLogger("silent"),
  });
  t.after(() => rotated.store.close());
  assert.equal(rotated.secrets.open(createSecretBox(KEY_C, cryptoRandom).seal("old")), "old", "the file key is current, the variable's key opens");
});
