// Verifying a browser's Latch session in your own server, with @latch/client.
//
// The browser holds Latch's HttpOnly `session_id` cookie and sends it to your server too (same site);
// these handlers hand it to Latch (`withRequest`) and ask `GET /auth/session`. They are plain
// `(req, res, next)` functions: Express and Connect take them as they are, and so does a node:http
// server that calls them (test/client-package.test.ts runs this file that way against a real Latch).
//
//   import express from "express";
//   import { createLatch, logout, requireMember } from "./express.mjs";
//
//   const latch = createLatch();
//   const app = express();
//   app.get("/account", requireMember(latch), (req, res) => res.json({ recordId: req.member.recordId }));
//   app.post("/logout", logout(latch));
//   app.listen(3000);
import { createLatchClient, isLatchError } from "@latch/client";

/**
 * Your server's one client, made at start. LATCH_URL: Latch as your server reaches it; LATCH_TENANT:
 * your tenant's domain (sent as X-Tenant-Domain). No key: these are the member's own calls.
 */
export function createLatch(env = process.env) {
  return createLatchClient({ baseUrl: env.LATCH_URL, tenantDomain: env.LATCH_TENANT });
}

/** Passes with `req.member` (Latch's session: recordId, exp, is2FAEnabled, …), or answers 401. */
export function requireMember(latch) {
  return async (req, res, next) => {
    try {
      req.member = await latch.withRequest(req).getSession();
    } catch (err) {
      // No cookie, or a session that ended: 401. Latch down or failing: your error handler (a 5xx).
      if (!isLatchError(err, "unauthorized")) return next(err);
      res.statusCode = 401;
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ error: "sign_in_required" }));
      return;
    }
    next();
  };
}

/** Ends the member's Latch session and passes Latch's cookie-clearing Set-Cookie on to the browser. */
export function logout(latch) {
  return async (req, res, next) => {
    const forBrowser = latch.withRequest(req);
    try {
      await forBrowser.logout();
    } catch (err) {
      // Already signed out: nothing to end, still a success for the browser.
      if (!isLatchError(err, "unauthorized")) return next(err);
    }
    res.setHeader("set-cookie", forBrowser.setCookies());
    res.statusCode = 204;
    res.end();
  };
}
