/**
 * D30: "this wasn't me" locks down and gives the old address back in one transaction. On
 * PostgreSQL another account can take that address while the restore is under way (a registration
 * verified meanwhile): the conditional write sees it committed and leaves the address to it, and
 * the lockdown still commits. (Within the write itself, the unique index would refuse it instead;
 * test/way-back.test.ts injects that refusal.) PostgreSQL only: SQLite's one writer can't
 * interleave there, so it lives in test/postgres/.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { assertError, ok } from "../support/assertions.js";
import { changeEmail, EMAIL, member, secureLinkOf, signIn } from "../support/account.js";
import { nextIp, sessionStatus } from "../support/flows.js";
import { post, registerVerifiedMember, STRONG_PASSWORD } from "../support/harness.js";
import { installStoreSeam } from "../support/store-seam.js";

test("D30 (PostgreSQL): an account verified with the old address while the restore is held keeps it; the lockdown stands and the answer says so", async (t) => {
  const { h, recordId } = await member(t);
  const intruderCookie = await signIn(h, EMAIL);
  await changeEmail(h, intruderCookie, "intruder@example.net", STRONG_PASSWORD);
  const ownersLink = await secureLinkOf(h, "email_changed", EMAIL);
  const seam = installStoreSeam(h);
  const held = seam.pause("members.updateEmail");
  const secured = post(h, "/auth/secure-account", ownersLink);
  await held.reached;
  // The address is free until the held write lands: someone who owns the mailbox verifies an account with it.
  const other = await registerVerifiedMember(h, EMAIL, STRONG_PASSWORD, nextIp());
  held.release();

  const answer = ok<{ message: string }>(await secured);
  assert.match(answer.message, /could not be given back/);
  const rows = await h.db
    .selectFrom("members")
    .select(["id", "email", "status"])
    .where("id", "in", [Number(recordId), Number(other)])
    .execute();
  assert.deepEqual(Object.fromEntries(rows.map((r) => [String(r.id), [r.email, r.status]])), {
    [recordId]: ["intruder@example.net", "Password Change Pending"],
    [other]: [EMAIL, "Unlocked"],
  });
  assert.equal(await sessionStatus(h, intruderCookie), 401, "the lockdown committed");
  assertError(await post(h, "/auth/secure-account", ownersLink), 400, "invalid_token");
});
