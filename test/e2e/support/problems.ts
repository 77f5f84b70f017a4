/**
 * What makes a page test fail besides its assertions: a console error, an uncaught exception, a
 * failed request or a Content-Security-Policy violation. The hosted pages ship a strict CSP, and a
 * violation is exactly the bug a browser-less test can't see (the page silently loses a script or
 * a style), so every one is reported with its directive and the blocked URL.
 */
import type { BrowserContext } from "playwright-core";
import type { PageWindow } from "./dom.js";

const CSP_BINDING = "__latchE2eReportCspViolation";
const FAVICON = /^https?:\/\/[^/]+\/favicon\.ico$/;

export interface CspViolation {
  directive: string;
  blockedURI: string;
  sourceFile: string;
  line: number;
  documentURI: string;
}

export interface PageProblems {
  /** Everything seen so far, one line each. */
  list(): string[];
  /** A problem the test provokes on purpose (say, a 404 it asserts): matching lines are not counted. */
  allow(pattern: RegExp): void;
  /** Throws listing every problem that isn't allowed. openTestPage calls it when the test ends. */
  assertNone(): void;
}

/** Must run before the context opens its first page, so the CSP listener is in every document. */
export async function watchPageProblems(context: BrowserContext): Promise<PageProblems> {
  const seen: string[] = [];
  const allowed: RegExp[] = [];
  context.on("console", (message) => {
    if (message.type() !== "error") return;
    const { url, lineNumber } = message.location();
    // Chromium asks for /favicon.ico by itself (when it does, and when a page names no icon, is a
    // race with the test's end); Latch serves none. That request is the browser's, not the page's.
    if (FAVICON.test(url)) return;
    seen.push(`console error: ${message.text()}${url ? ` (${url}:${lineNumber})` : ""}`);
  });
  context.on("weberror", (error) => seen.push(`uncaught in page: ${error.error().message}`));
  context.on("requestfailed", (request) => {
    const failure = request.failure()?.errorText ?? "unknown";
    // A navigation that replaces a loading page aborts its requests; that is not a fault. A request
    // the CSP refused ("csp") is already reported, with its directive, by the violation listener.
    if (failure !== "net::ERR_ABORTED" && failure !== "csp") seen.push(`request failed: ${request.method()} ${request.url()}: ${failure}`);
  });
  // Bindings and init scripts go through the DevTools protocol, so the page's CSP doesn't block them.
  await context.exposeBinding(CSP_BINDING, (_source, violation: CspViolation) => {
    seen.push(
      `CSP violation: ${violation.directive} blocked ${violation.blockedURI || "(inline)"} in ${violation.documentURI} (${violation.sourceFile}:${violation.line})`,
    );
  });
  await context.addInitScript((binding: string) => {
    const page = globalThis as unknown as PageWindow & Record<string, ((violation: CspViolation) => void) | undefined>;
    page.document.addEventListener("securitypolicyviolation", (event) => {
      page[binding]?.({
        directive: event.effectiveDirective,
        blockedURI: event.blockedURI,
        sourceFile: event.sourceFile,
        line: event.lineNumber,
        documentURI: event.documentURI,
      });
    });
  }, CSP_BINDING);

  const unexpected = () => seen.filter((line) => !allowed.some((pattern) => pattern.test(line)));
  return {
    list: () => [...seen],
    allow: (pattern) => void allowed.push(pattern),
    assertNone() {
      const problems = unexpected();
      if (problems.length > 0) throw new Error(`the page had ${problems.length} problem(s):\n  - ${problems.join("\n  - ")}`);
    },
  };
}
