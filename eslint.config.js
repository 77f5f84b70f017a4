// Lint rules that guard the architecture, not formatting.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

// STYLE habit 3: time and randomness come from deps (src/core/), so tests can control them.
const bannedClockAndRandom = [
  { selector: "CallExpression[callee.object.name='Date'][callee.property.name='now']", message: "Use deps.clock.now() (src/core/clock.ts)." },
  { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: "Use new Date(deps.clock.now())." },
  { selector: "CallExpression[callee.object.name='Math'][callee.property.name='random']", message: "Use deps.random (src/core/random.ts)." },
];

export default tseslint.config(
  { ignores: ["dist/", "packages/client/dist/", "node_modules/", "coverage/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // Plain-JS scripts run on Node.
    files: ["scripts/**/*.mjs", "bench/**/*.mjs"],
    languageOptions: { globals: { process: "readonly", console: "readonly" } },
  },
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
  {
    files: ["src/**/*.ts"],
    ignores: ["src/core/**"],
    rules: {
      "no-restricted-syntax": ["error", ...bannedClockAndRandom],
      "no-restricted-imports": ["error", {
        paths: [{ name: "node:crypto", importNames: ["randomBytes", "randomInt", "randomUUID"], message: "Use deps.random (src/core/random.ts)." }],
      }],
    },
  },
  {
    // The client SDK ships on its own and runs in browsers: web-standard APIs only, nothing from the service.
    files: ["packages/client/src/**/*.ts"],
    rules: {
      "no-restricted-imports": ["error", {
        patterns: [{ group: ["node:*", "**/src/**", "../../../*"], message: "The SDK runs in browsers and ships apart from the service: fetch, Headers, URL and URLSearchParams only." }],
      }],
    },
  },
  {
    files: ["src/flows/**/*.ts"],
    rules: {
      "no-restricted-imports": ["error", {
        patterns: [{ group: ["fastify", "@fastify/*", "**/http/**"], message: "Flows don't know HTTP (STYLE habit 1)." }],
        paths: [{ name: "node:crypto", importNames: ["randomBytes", "randomInt", "randomUUID"], message: "Use deps.random (src/core/random.ts)." }],
      }],
    },
  },
);
