/**
 * Self-test of test/support/webauthn-authenticator.ts: its ceremonies pass @simplewebauthn/server's
 * own verification, and each override it offers for attack tests makes verification fail.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type WebAuthnCredential,
} from "@simplewebauthn/server";
import { SoftAuthenticator, type AssertionOverrides } from "./support/webauthn-authenticator.js";

const RP_ID = "shop.example";
const ORIGIN = "https://shop.example";
const USER_ID = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]);

async function register(authenticator: SoftAuthenticator): Promise<WebAuthnCredential> {
  const options = await generateRegistrationOptions({
    rpID: RP_ID,
    rpName: "Shop",
    userName: "ada@shop.example",
    userID: USER_ID,
    authenticatorSelection: { residentKey: "required", userVerification: "required" },
  });
  const response = authenticator.createCredential(options, ORIGIN);
  const result = await verifyRegistrationResponse({
    response,
    expectedChallenge: options.challenge,
    expectedOrigin: ORIGIN,
    expectedRPID: RP_ID,
    requireUserVerification: true,
  });
  assert.equal(result.verified, true);
  assert.ok(result.registrationInfo);
  assert.equal(result.registrationInfo.fmt, "none");
  assert.equal(result.registrationInfo.credentialDeviceType, "singleDevice");
  const { credential } = result.registrationInfo;
  assert.equal(credential.id, response.id);
  assert.equal(credential.counter, 0);
  return credential;
}

/** An assertion for a fresh challenge, verified the way the service would; returns the result or the error. */
async function authenticate(authenticator: SoftAuthenticator, credential: WebAuthnCredential, overrides: AssertionOverrides & { origin?: string } = {}) {
  const options = await generateAuthenticationOptions({ rpID: RP_ID, userVerification: "required" });
  const { origin = ORIGIN, ...rest } = overrides;
  const response: AuthenticationResponseJSON = authenticator.getAssertion(options, origin, rest);
  try {
    const result = await verifyAuthenticationResponse({
      response,
      expectedChallenge: options.challenge,
      expectedOrigin: ORIGIN,
      expectedRPID: RP_ID,
      credential,
      requireUserVerification: true,
    });
    return { response, result, error: undefined };
  } catch (error) {
    return { response, result: undefined, error };
  }
}

/** The verifier throws for most forgeries (checked against `reason`); a bad signature gives verified: false. */
function assertRejected(outcome: Awaited<ReturnType<typeof authenticate>>, reason?: RegExp): void {
  if (reason === undefined) return assert.equal(outcome.result?.verified, false);
  assert.ok(outcome.error instanceof Error, "verification should throw");
  assert.match(outcome.error.message, reason);
}

test("a registration and a discoverable login verify, and the counter advances", async () => {
  const authenticator = new SoftAuthenticator();
  const credential = await register(authenticator);

  const first = await authenticate(authenticator, credential);
  assert.equal(first.error, undefined);
  assert.equal(first.result?.verified, true);
  assert.equal(first.result?.authenticationInfo.newCounter, 1);
  assert.equal(first.result?.authenticationInfo.userVerified, true);
  assert.equal(first.response.id, credential.id);
  assert.equal(first.response.response.userHandle, Buffer.from(USER_ID).toString("base64url"));

  const second = await authenticate(authenticator, { ...credential, counter: 1 });
  assert.equal(second.result?.authenticationInfo.newCounter, 2);
});

test("each forged assertion fails verification", async () => {
  const authenticator = new SoftAuthenticator();
  const credential = await register(authenticator);
  const other = Buffer.from("not the challenge").toString("base64url");

  assertRejected(await authenticate(authenticator, credential, { origin: "https://evil.example" }), /origin/);
  assertRejected(await authenticate(authenticator, credential, { rpId: "evil.example" }), /RP ID hash/);
  assertRejected(await authenticate(authenticator, credential, { corruptSignature: true }));
  assertRejected(await authenticate(authenticator, credential, { challenge: other }), /challenge/);
  assertRejected(await authenticate(authenticator, credential, { userVerified: false }), /User verification required/);
  assertRejected(await authenticate(authenticator, credential, { type: "webauthn.create" }), /type/);
  // A replayed counter: the server has seen 5, the authenticator claims 3.
  assertRejected(await authenticate(authenticator, { ...credential, counter: 5 }, { signCount: 3 }), /counter/);
});

test("a credential copied to another authenticator signs the same way, and only for its RP", async () => {
  const owner = new SoftAuthenticator();
  const credential = await register(owner);
  const thief = new SoftAuthenticator();
  const [stolen] = owner.credentials;
  assert.ok(stolen);
  thief.addCredential(stolen);

  const replayed = await authenticate(thief, credential);
  assert.equal(replayed.result?.verified, true);

  const elsewhere = await generateAuthenticationOptions({ rpID: "other.example" });
  assert.throws(() => thief.getAssertion(elsewhere, "https://other.example"), /no credential for other\.example/);
  const presented = thief.getAssertion(elsewhere, "https://other.example", { credentialId: stolen.id });
  await assert.rejects(
    verifyAuthenticationResponse({
      response: presented,
      expectedChallenge: elsewhere.challenge,
      expectedOrigin: "https://other.example",
      expectedRPID: "other.example",
      credential,
    }),
  );
});

test("backup flags and excludeCredentials behave like a platform authenticator", async () => {
  const authenticator = new SoftAuthenticator();
  const options = await generateRegistrationOptions({ rpID: RP_ID, rpName: "Shop", userName: "bob@shop.example" });
  const response = authenticator.createCredential(options, ORIGIN, { backupEligible: true, backupState: true });
  assert.deepEqual(response.response.transports, ["internal"]);
  const result = await verifyRegistrationResponse({ response, expectedChallenge: options.challenge, expectedOrigin: ORIGIN, expectedRPID: RP_ID });
  assert.equal(result.registrationInfo?.credentialDeviceType, "multiDevice");
  assert.equal(result.registrationInfo?.credentialBackedUp, true);

  const again = await generateRegistrationOptions({ rpID: RP_ID, rpName: "Shop", userName: "bob@shop.example", excludeCredentials: [{ id: response.id }] });
  assert.throws(() => authenticator.createCredential(again, ORIGIN), /InvalidStateError/);
});
