import assert from "node:assert/strict";
import { test } from "node:test";
import { createHarness, get, login, registerVerifiedMember, sessionCookieOf } from "./support/harness.js";

test("register, verify, login, session", async () => {
  const h = await createHarness();
  try {
    const recordId = await registerVerifiedMember(h, "ada@example.org");
    const res = await login(h, "ada@example.org");
    assert.equal(res.statusCode, 200, res.body);
    const cookie = sessionCookieOf(res);
    assert.ok(cookie);
    const session = await get(h, "/auth/session", { cookie });
    assert.equal(session.statusCode, 200, session.body);
    assert.equal(session.json().recordId, recordId);
  } finally {
    await h.close();
  }
});
