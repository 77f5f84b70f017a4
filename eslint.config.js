// Lint rules that guard the architecture, not formatting.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

// STYLE habit 3: time and randomness come from deps (src/core/), so tests can control them.
const bannedClockAndRandom = [
  { selector: "CallExpression[callee.object.name='Date'][callee.property.name='now']", message: "Use deps.clock.now() (src/core/clock.ts)." },
  { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: "Use new Date(deps.clock.now())." },
  { selector: "CallExpression[callee.object.name='Math'][callee.property.name='random']", message: "Use deps.random (src/core/random.ts)." },
];

// contract.md#issue-28: inside a transaction's callback the outer store is the trap (it never returned on
// SQLite and ran outside the transaction on PostgreSQL): the callback's own `tx` is the store there.
const outerStoreInTransaction = {
  selector: "CallExpression[callee.property.name='transaction'] > :function MemberExpression[object.name='deps'][property.name='store']",
  message: "Inside store.transaction, use the transaction's store (tx), never deps.store (src/store/transaction-scope.ts).",
};

// contract.md#issue-18: the layers, lowest first (docs/architecture.md). A file imports from its own layer and
// the ones below, type imports included. Matched on the import's text, so a layer is its folder
// name or, for the files at the top of src/, the file's name.
const LAYERS = [
  { name: "core", files: ["src/core/**/*.ts", "src/errors.ts", "src/rules.ts", "src/model.ts"], imports: ["core/"] },
  { name: "security", files: ["src/security/**/*.ts"], imports: ["security/"] },
  {
    name: "providers",
    files: ["src/providers/**/*.ts", "src/config.ts", "src/logging.ts", "src/metrics.ts"],
    imports: ["providers/", "config.js", "logging.js", "metrics.js"],
  },
  { name: "store", files: ["src/store/**/*.ts"], imports: ["store/"] },
  { name: "events", files: ["src/events/**/*.ts"], imports: ["events/"] },
  { name: "the Deps type", files: ["src/deps.ts"], imports: ["deps.js"] },
  { name: "flows", files: ["src/flows/**/*.ts"], imports: ["flows/"] },
  { name: "wiring", files: ["src/create-deps.ts", "src/start-up.ts"], imports: ["create-deps.js", "start-up.js"] },
  { name: "http and hosted pages", files: ["src/http/**/*.ts", "src/ui/**/*.ts"], imports: ["http/", "ui/"] },
  { name: "app", files: ["src/app.ts", "src/server.ts"], imports: ["app.js", "server.js"] },
  { name: "entries: dev mode, CLI", files: ["src/dev/**/*.ts", "src/cli/**/*.ts", "src/main.ts"], imports: ["dev/", "cli/", "main.js"] },
];
const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const layerPatterns = (layer, index) =>
  LAYERS.slice(index + 1).flatMap((above) =>
    above.imports.map((target) => ({
      regex: `(^|/)${escape(target)}${target.endsWith("/") ? "" : "$"}`,
      message: `${layer.name} sits below ${above.name}: import from your layer or the ones below (docs/architecture.md).`,
    })),
  );

// contract.md#issue-28: the flows are feature slices over a shared kernel (docs/architecture.md). A slice
// imports the kernel and itself, never another slice; the kernel imports no slice. So a change to
// one feature stays in its folder (plus its route and page), and shared plumbing lives in one place.
export const FLOW_SLICES = ["registration", "login", "password", "two-factor", "passkeys", "account", "admin", "tenants", "federation", "oidc"];
const sliceImport = (slice) => ({
  regex: `^\\.\\./${escape(slice)}/`,
  message: `A flow slice imports the kernel and itself only: move what ${slice}/ shares into flows/kernel/.`,
});
const flowSlicePatterns = (folder) => FLOW_SLICES.filter((slice) => slice !== folder).map(sliceImport);

const restrictImports = (files, patterns) => ({
  files,
  ignores: ["src/ui/browser/**"],
  rules: { "@typescript-eslint/no-restricted-imports": ["error", { patterns }] },
});
const layerConfigs = LAYERS.flatMap((layer, index) => {
  const patterns = layerPatterns(layer, index);
  if (layer.name !== "flows") return [restrictImports(layer.files, patterns)];
  return [
    // A file outside every slice still keeps the layer order (test/architecture.test.ts says it must move into one).
    restrictImports(["src/flows/*.ts"], patterns),
    ...["kernel", ...FLOW_SLICES].map((folder) => restrictImports([`src/flows/${folder}/**/*.ts`], [...patterns, ...flowSlicePatterns(folder)])),
  ];
});

export default tseslint.config(
  { ignores: ["dist/", "packages/client/dist/", "node_modules/", "coverage/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // contract.md#issue-28: lint with types. Each file is read in the program of its nearest tsconfig.json, as an
    // editor does: the root's, or packages/client's and src/ui/browser's (browser libraries only).
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
  },
  // Plain JavaScript (this file, scripts/*.mjs, bench/*.mjs) is in no tsconfig: linted without types.
  { files: ["**/*.js", "**/*.mjs"], ...tseslint.configs.disableTypeChecked },
  {
    files: ["**/*.ts"],
    rules: {
      // A promise nobody awaits loses its rejection (an unhandled rejection ends the process) and its
      // ordering. node:test's test()/describe() return promises the runner itself awaits.
      "@typescript-eslint/no-floating-promises": [
        "error",
        { allowForKnownSafeCalls: [{ from: "package", package: "node:test", name: ["test", "describe", "it", "suite"] }] },
      ],
      // An async function where a callback's result is ignored (an event listener, a Fastify option typed
      // void): its rejection goes nowhere. And a promise in an `if` is always true.
      "@typescript-eslint/no-misused-promises": "error",
      // A switch over a union names every member (a `default` does not stand in for them), so a new
      // member of the union is a lint error at every switch that must decide about it.
      "@typescript-eslint/switch-exhaustiveness-check": "error",
      "@typescript-eslint/no-unnecessary-type-assertion": "error",
      "@typescript-eslint/await-thenable": "error",
      // STYLE habit 2, one error type: only Error objects are thrown, so every failure has a stack
      // and the error handler can tell an AuthError from a bug.
      "@typescript-eslint/only-throw-error": "error",
      // "[object Object]" in a message, a log line or an audit field is a lost value.
      "@typescript-eslint/no-base-to-string": "error",
    },
  },
  {
    // Plain-JS scripts run on Node.
    files: ["scripts/**/*.mjs", "bench/**/*.mjs", "packages/client/scripts/**/*.mjs", "packages/client/examples/**/*.mjs"],
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
      "no-restricted-syntax": ["error", ...bannedClockAndRandom, outerStoreInTransaction],
      "no-restricted-imports": [
        "error",
        {
          paths: [{ name: "node:crypto", importNames: ["randomBytes", "randomInt", "randomUUID"], message: "Use deps.random (src/core/random.ts)." }],
        },
      ],
    },
  },
  {
    // The client SDK ships on its own and runs in browsers: web-standard APIs only, nothing from the service.
    files: ["packages/client/src/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["node:*", "**/src/**", "../../../*"],
              message: "The SDK runs in browsers and ships apart from the service: fetch, Headers, URL and URLSearchParams only.",
            },
          ],
        },
      ],
    },
  },
  {
    files: ["src/flows/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [{ group: ["fastify", "@fastify/*", "**/http/**"], message: "Flows don't know HTTP (STYLE habit 1)." }],
          paths: [{ name: "node:crypto", importNames: ["randomBytes", "randomInt", "randomUUID"], message: "Use deps.random (src/core/random.ts)." }],
        },
      ],
    },
  },
  ...layerConfigs,
);
