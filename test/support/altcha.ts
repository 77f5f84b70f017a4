/**
 * What the ALTCHA widget sends (D10): the challenge solved with altcha-lib, as base64 of JSON
 * { challenge, solution }. The harness makes the proof of work cheap (CHEAP_ALTCHA); a real
 * difficulty takes a few seconds.
 */
import assert from "node:assert/strict";
import { solveChallenge, type Challenge } from "altcha-lib";
import { deriveKey } from "altcha-lib/algorithms/sha";

/** The bot-challenge-response for `challenge` (a SHA-256 one, as the harness's tenants give). */
export async function solveAltcha(challenge: Challenge): Promise<string> {
  const solution = await solveChallenge({ challenge, deriveKey });
  assert.ok(solution, "altcha-lib solved the challenge");
  return Buffer.from(JSON.stringify({ challenge, solution })).toString("base64");
}
