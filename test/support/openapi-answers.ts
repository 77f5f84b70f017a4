/**
 * Checks real answers against docs/openapi.json (issue 16): the status must be one the operation
 * documents, the body must match that response's schema, and every documented header must be
 * there and match. Webhook bodies are checked against the document's `webhooks`. Schemas are
 * compiled by ajv (JSON Schema 2020-12, as OpenAPI 3.1 uses) straight out of the document, so a
 * `$ref` resolves exactly as a client generator resolves it.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { OPENAPI_FILE } from "../../scripts/openapi.js";
import { ERROR_BODY_ID } from "../../src/http/schemas.js";

type Json = Record<string, unknown>;
const DOCUMENT_ID = "openapi.json";
const HTTP_METHODS: readonly string[] = ["get", "put", "post", "delete", "patch"];

/** An answer, as fetch or app.inject gives it: header names are asked for in lowercase. */
export interface Answer {
  status: number;
  header(name: string): string | string[] | undefined;
  body: string;
}

/** Headers an answer may only send where the document lists them: a client acts on each. */
const HEADERS_TO_DOCUMENT = ["set-cookie", "retry-after", "location", "www-authenticate"];

/** What the document's description says answers a request no operation takes (an unknown path or method, a bad URL), or the server's own state. */
const ROUTER_STATUSES = [400, 404, 408, 413, 414, 415, 431, 500, 503];

interface PathTemplate {
  path: string;
  methods: Set<string>;
  parameters: number;
  pattern: RegExp;
}

export interface DocumentedOperation {
  key: string;
  operationId: string;
  method: string;
  path: string;
  statuses: string[];
}

/** `/a/{b}` as a JSON pointer segment. */
function escapePointer(segment: string): string {
  return segment.replace(/~/g, "~0").replace(/\//g, "~1");
}

export class OpenApiAnswerChecker {
  readonly document: Json;
  readonly operations: DocumentedOperation[];
  /** operation key (`POST /auth/login`) -> statuses seen. */
  readonly seen = new Map<string, Set<number>>();
  readonly webhooksSeen = new Set<string>();
  private readonly ajv: Ajv2020;
  private readonly validators = new Map<string, ValidateFunction>();
  private pathTemplates: PathTemplate[] | undefined;

  constructor() {
    this.document = JSON.parse(readFileSync(OPENAPI_FILE, "utf8")) as Json;
    this.ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats.default(this.ajv);
    this.ajv.addSchema(this.document, DOCUMENT_ID);
    const paths = this.document.paths as Record<string, Json>;
    this.operations = Object.entries(paths).flatMap(([path, item]) =>
      HTTP_METHODS.filter((method) => method in item).map((method) => {
        const operation = item[method] as Json;
        return {
          key: `${method.toUpperCase()} ${path}`,
          operationId: operation.operationId as string,
          method,
          path,
          statuses: Object.keys(operation.responses as Json),
        };
      }),
    );
  }

  private validatorAt(pointer: string): ValidateFunction {
    let validate = this.validators.get(pointer);
    if (!validate) {
      validate = this.ajv.compile({ $ref: `${DOCUMENT_ID}#${pointer}` });
      this.validators.set(pointer, validate);
    }
    return validate;
  }

  private at(pointer: string): Json {
    let node: unknown = this.document;
    for (const raw of pointer.split("/").slice(1)) node = (node as Json)[raw.replace(/~1/g, "/").replace(/~0/g, "~")];
    assert.ok(node !== undefined, `${pointer} is in the document`);
    return node as Json;
  }

  private problemOf(pointer: string, value: unknown, label: string): string | undefined {
    const validate = this.validatorAt(pointer);
    if (validate(value)) return undefined;
    return `${label} does not match the document (${pointer}): ${this.ajv.errorsText(validate.errors)}\n${JSON.stringify(value).slice(0, 2000)}`;
  }

  /** Checks one answer of `method schemaPath` (the template, `/auth/passkeys/{id}`) and records it. */
  async checkAnswer(method: string, schemaPath: string, response: Response): Promise<void> {
    const problems = this.problemsOfAnswer(method, schemaPath, {
      status: response.status,
      header: (name) => (name === "set-cookie" ? response.headers.getSetCookie() : (response.headers.get(name) ?? undefined)),
      body: await response.clone().text(),
    });
    assert.deepStrictEqual(problems, [], problems.join("\n"));
  }

  /**
   * What is wrong with one answer of `method schemaPath` against the document, if anything: a status
   * the operation does not list, a body its schema refuses, a documented header that fails its
   * schema or `x-request-id` missing, or a Set-Cookie or Retry-After the answer does not list. Records the status.
   */
  problemsOfAnswer(method: string, schemaPath: string, answer: Answer): string[] {
    const key = `${method.toUpperCase()} ${schemaPath}`;
    const label = `${key} -> ${answer.status}`;
    const operationPointer = `/paths/${escapePointer(schemaPath)}/${method.toLowerCase()}`;
    const responses = this.at(operationPointer).responses as Json;
    const statusKey = [String(answer.status), `${String(answer.status)[0]}XX`, "default"].find((s) => s in responses);
    if (!statusKey) return [`${label}: status not documented (documented: ${Object.keys(responses).join(", ")})\n${answer.body.slice(0, 2000)}`];
    const problems: string[] = [];
    const responsePointer = `${operationPointer}/responses/${escapePointer(statusKey)}`;
    const documented = this.at(responsePointer);
    const content = documented.content as Json | undefined;
    if (content) problems.push(...this.problemsOfJsonBody(`${responsePointer}/content/application~1json/schema`, answer, label));
    const headers = (documented.headers ?? {}) as Record<string, Json>;
    for (const [name, header] of Object.entries(headers)) {
      const raw = answer.header(name.toLowerCase());
      const value = Array.isArray(raw) ? raw.join(", ") || undefined : raw;
      // Every answer names its request id; the others (Set-Cookie, Retry-After) come when they apply.
      if (value === undefined) {
        if (name === "x-request-id") problems.push(`${label}: no ${name} header`);
        continue;
      }
      const headerPointer = typeof header.$ref === "string" ? `${header.$ref.slice(1)}/schema` : `${responsePointer}/headers/${escapePointer(name)}`;
      const schema = this.at(headerPointer);
      const typed = schema.type === "integer" || schema.type === "number" ? Number(value) : value;
      const problem = this.problemOf(headerPointer, typed, `${label} header ${name}`);
      if (problem) problems.push(problem);
    }
    const documentedNames = new Set(Object.keys(headers).map((name) => name.toLowerCase()));
    for (const name of HEADERS_TO_DOCUMENT) {
      const value = answer.header(name);
      if (value !== undefined && (!Array.isArray(value) || value.length > 0) && !documentedNames.has(name)) {
        problems.push(`${label}: sends ${name} (${String(value)}), which the document does not list for this answer`);
      }
    }
    const statuses = this.seen.get(key) ?? new Set<number>();
    statuses.add(answer.status);
    this.seen.set(key, statuses);
    return problems;
  }

  private problemsOfJsonBody(schemaPointer: string, answer: Answer, label: string): string[] {
    const contentType = answer.header("content-type");
    if (typeof contentType !== "string" || !/^application\/json/.test(contentType)) return [`${label}: content-type ${String(contentType)}, not JSON`];
    let body: unknown;
    try {
      body = JSON.parse(answer.body);
    } catch {
      return [`${label}: the body is not JSON: ${answer.body.slice(0, 200)}`];
    }
    const problem = this.problemOf(schemaPointer, body, `${label} body`);
    return problem ? [problem] : [];
  }

  /**
   * The problems of an answer to `method url` (a real path, query included), whichever operation
   * it is: the path is matched against the document's templates, a fixed one first. An answer to
   * a path or method the document does not have is a route it hides (the hosted pages, /docs) or
   * the router's refusal: then only a JSON error body is checked, against the contract.md#d4 `ErrorBody`.
   */
  problemsOfRequest(method: string, url: string, isRoute: (method: string, path: string) => boolean, answer: Answer): string[] {
    const upper = method.toUpperCase();
    if (upper === "HEAD" || upper === "OPTIONS") return [];
    const path = url.split("?")[0]!;
    const template = this.templates.find((t) => t.pattern.test(path) && t.methods.has(method.toLowerCase()));
    if (template) return this.problemsOfAnswer(method, template.path, answer);
    if (isRoute(method, path) || answer.status < 400 || !/^application\/json/.test(String(answer.header("content-type")))) return [];
    const label = `${upper} ${path} (no operation) -> ${answer.status}`;
    if (!ROUTER_STATUSES.includes(answer.status)) return [`${label}: not a status the document says the router answers (${ROUTER_STATUSES.join(", ")})`];
    return this.problemsOfJsonBody(`/components/schemas/${ERROR_BODY_ID}`, answer, label);
  }

  /** The document's paths as patterns, the ones with fewer parameters first (`/auth/sessions/revoke-others` before `/auth/sessions/{id}`). */
  private get templates(): PathTemplate[] {
    this.pathTemplates ??= Object.entries(this.document.paths as Record<string, Json>)
      .map(([path, item]) => ({
        path,
        methods: new Set(HTTP_METHODS.filter((m) => m in item)),
        parameters: (path.match(/\{/g) ?? []).length,
        pattern: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+")}$`),
      }))
      .sort((a, b) => a.parameters - b.parameters);
    return this.pathTemplates;
  }

  /** Checks a webhook body against the document's `webhooks` entry for its event_type. */
  checkWebhook(body: Json): void {
    const problems = this.problemsOfWebhook(body);
    assert.deepStrictEqual(problems, [], problems.join("\n"));
    this.webhooksSeen.add(String(body.event_type));
  }

  problemsOfWebhook(body: Json): string[] {
    const type = String(body.event_type);
    if (!(type in (this.document.webhooks as Json))) return [`webhook ${type} is not in the document's webhooks`];
    const problem = this.problemOf(`/webhooks/${escapePointer(type)}/post/requestBody/content/application~1json/schema`, body, `webhook ${type}`);
    return problem ? [problem] : [];
  }
}

let sharedChecker: OpenApiAnswerChecker | undefined;
/** One checker per process, so the document is read and each schema compiled once (test/support/harness.ts). */
export function documentChecker(): OpenApiAnswerChecker {
  sharedChecker ??= new OpenApiAnswerChecker();
  return sharedChecker;
}
