/**
 * Issue 28: the service's package.json says what the service needs, and the benchmark (bench/, the
 * @latch/bench workspace) says what only it needs. Each file's imports are read from its syntax tree
 * (static, dynamic and type imports, require(), createRequire(...)(...), import.meta.resolve), so a
 * package named in a comment or a string doesn't count.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { isBuiltin } from "node:module";
import { dirname, extname, join, normalize, sep } from "node:path";
import { test } from "node:test";
import ts from "typescript";

interface Manifest {
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

const readManifest = (file: string) => JSON.parse(readFileSync(file, "utf8")) as Manifest;
const root = readManifest("package.json");
const bench = readManifest("bench/package.json");
const names = (...lists: Array<Record<string, string> | undefined>) => new Set(lists.flatMap((list) => Object.keys(list ?? {})));
const rootRuntime = names(root.dependencies);
const rootDeclared = names(root.dependencies, root.devDependencies);
const benchDeclared = names(bench.dependencies, bench.devDependencies);

const SOURCE = new Set([".ts", ".mts", ".cts", ".js", ".mjs", ".cjs"]);

function sourceFiles(path: string): string[] {
  if (SOURCE.has(extname(path)) && !path.endsWith(".d.ts")) return [path];
  if (extname(path) !== "") return [];
  return readdirSync(path, { withFileTypes: true }).flatMap((entry) =>
    entry.name === "node_modules" || entry.name === "dist" ? [] : sourceFiles(join(path, entry.name)),
  );
}

const parsed = new Map<string, string[]>();

/** Every module specifier `file` imports, whatever the form. */
function specifiers(file: string): string[] {
  const known = parsed.get(file);
  if (known) return known;
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const literal = (node: ts.Node | undefined) => {
    if (node && ts.isStringLiteralLike(node)) found.push(node.text);
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) literal(node.moduleSpecifier);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) literal(node.moduleReference.expression);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) literal(node.argument.literal);
    else if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const text = callee.getText(source);
      const loads =
        callee.kind === ts.SyntaxKind.ImportKeyword ||
        ["require", "require.resolve", "import.meta.resolve"].includes(text) ||
        (ts.isCallExpression(callee) && callee.expression.getText(source) === "createRequire");
      if (loads) literal(node.arguments[0]);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  parsed.set(file, found);
  return found;
}

/** The package a bare specifier names ("@scope/name" or "name"); undefined for Node's own and for paths. */
function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith(".") || specifier.startsWith("/") || isBuiltin(specifier)) return undefined;
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

/** Package -> the files under `paths` that import it. */
function packagesImported(...paths: string[]): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  for (const file of paths.flatMap(sourceFiles)) {
    for (const specifier of specifiers(file)) {
      const name = packageOf(specifier);
      if (name !== undefined) found.set(name, (found.get(name) ?? new Set()).add(file));
    }
  }
  return found;
}

const undeclared = (imported: Map<string, Set<string>>, declared: Set<string>) =>
  [...imported].filter(([name]) => !declared.has(name)).map(([name, files]) => `${name} (${[...files].join(", ")})`);

// The service as it runs: src/ (dist/ is built from it; src/ui/browser is bundled from it) and
// what `npm start` runs before it.
const runtime = packagesImported("src", "scripts/build-if-stale.mjs");
// Its development: tests, scripts, the lint configuration.
const development = packagesImported("test", "scripts", "eslint.config.js");
const benchmark = packagesImported("bench");

test("the service imports at run time only what the root package.json lists in dependencies", () => {
  assert.ok(runtime.has("fastify") && runtime.has("kysely"), "the scan found the service's imports");
  assert.deepEqual(undeclared(runtime, rootRuntime), []);
});

test("tests and scripts import only what the root package.json lists", () => {
  assert.ok(development.has("eslint") && development.has("playwright-core"), "the scan found the tests' imports");
  assert.deepEqual(undeclared(development, rootDeclared), []);
});

test("the benchmark imports only what bench/package.json lists or the service it measures already has", () => {
  // Without createRequire(...)("autocannon") (bench/load.ts) the scan would miss a bench-only package.
  assert.ok(benchmark.has("autocannon") && benchmark.has("better-auth"), "the scan found the benchmark's imports");
  assert.deepEqual(undeclared(benchmark, new Set([...benchDeclared, ...rootDeclared])), []);
  const unused = [...benchDeclared].filter((name) => !benchmark.has(name));
  assert.deepEqual(unused, [], "bench/package.json lists packages bench/ does not import");
});

test("the root package.json lists no bench-only dependency", () => {
  const both = [...benchDeclared].filter((name) => rootDeclared.has(name));
  assert.deepEqual(both, [], "listed by both: a package the service uses belongs to the root only, one only bench uses to bench/package.json");
  const service = new Set([...runtime.keys(), ...development.keys()]);
  const onlyBench = [...rootDeclared].filter((name) => benchmark.has(name) && !service.has(name));
  assert.deepEqual(onlyBench, [], "the root lists packages only bench/ imports: move them to bench/package.json");
});

test("the service, its tests and scripts import nothing from bench/", () => {
  const into = (file: string, specifier: string) => specifier.startsWith(".") && normalize(join(dirname(file), specifier)).startsWith(`bench${sep}`);
  const offending = ["src", "test", "scripts"].flatMap(sourceFiles).flatMap((file) =>
    specifiers(file)
      .filter((specifier) => into(file, specifier) || packageOf(specifier) === "@latch/bench")
      .map((s) => `${file}: ${s}`),
  );
  assert.deepEqual(offending, []);
});
