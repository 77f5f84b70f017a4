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

type Json = Record<string, unknown>;
const DOCUMENT_ID = "openapi.json";
const HTTP_METHODS = ["get", "put", "post", "delete", "patch"] as const;

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

  private assertValid(pointer: string, value: unknown, label: string): void {
    const validate = this.validatorAt(pointer);
    assert.ok(
      validate(value),
      `${label} does not match the document (${pointer}): ${this.ajv.errorsText(validate.errors)}\n${JSON.stringify(value).slice(0, 2000)}`,
    );
  }

  /** Checks one answer of `method schemaPath` (the template, `/auth/passkeys/{id}`) and records it. */
  async checkAnswer(method: string, schemaPath: string, response: Response): Promise<void> {
    const key = `${method.toUpperCase()} ${schemaPath}`;
    const label = `${key} -> ${response.status}`;
    const operationPointer = `/paths/${escapePointer(schemaPath)}/${method.toLowerCase()}`;
    const responses = this.at(operationPointer).responses as Json;
    const statusKey = [String(response.status), `${String(response.status)[0]}XX`, "default"].find((s) => s in responses);
    assert.ok(statusKey, `${label}: status not documented (documented: ${Object.keys(responses).join(", ")})\n${await response.clone().text()}`);
    const responsePointer = `${operationPointer}/responses/${escapePointer(statusKey)}`;
    const documented = this.at(responsePointer);

    const content = documented.content as Json | undefined;
    if (content) {
      assert.match(response.headers.get("content-type") ?? "", /^application\/json/, `${label}: content-type`);
      const body = JSON.parse(await response.clone().text()) as unknown;
      this.assertValid(`${responsePointer}/content/application~1json/schema`, body, `${label} body`);
    }
    for (const [name, header] of Object.entries((documented.headers ?? {}) as Record<string, Json>)) {
      const value = name.toLowerCase() === "set-cookie" ? response.headers.getSetCookie().join(", ") || null : response.headers.get(name);
      // Every answer names its request id; the others (Set-Cookie, Retry-After) come when they apply.
      if (name === "x-request-id") assert.ok(value, `${label}: no ${name} header`);
      if (value === null) continue;
      const headerPointer = typeof header.$ref === "string" ? `${header.$ref.slice(1)}/schema` : `${responsePointer}/headers/${escapePointer(name)}`;
      const schema = this.at(headerPointer);
      const typed = schema.type === "integer" || schema.type === "number" ? Number(value) : value;
      this.assertValid(headerPointer, typed, `${label} header ${name}`);
    }
    const statuses = this.seen.get(key) ?? new Set<number>();
    statuses.add(response.status);
    this.seen.set(key, statuses);
  }

  /** Checks a webhook body against the document's `webhooks` entry for its event_type. */
  checkWebhook(body: Json): void {
    const type = String(body.event_type);
    const webhooks = this.document.webhooks as Json;
    assert.ok(type in webhooks, `webhook ${type} is not in the document's webhooks`);
    this.assertValid(`/webhooks/${escapePointer(type)}/post/requestBody/content/application~1json/schema`, body, `webhook ${type}`);
    this.webhooksSeen.add(type);
  }
}
