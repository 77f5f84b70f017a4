/**
 * JSON the operator typed (`--settings`, `--settings-file`), parsed with a position when it is not
 * JSON (docs/operations.md#cli-settings-errors). JSON.parse decides what is valid; its messages
 * give a position only sometimes, and for an unexpected character they quote the text around it,
 * which may hold a bot `secretKey`. So when JSON.parse refuses, this scanner, which follows RFC 8259,
 * finds where and says what it expected there, and never repeats the text.
 */

export interface JsonProblem {
  /** What was expected, in words: "a double-quoted property name", "',' or '}'". */
  expected: string;
  /** 0-based offset of the first character that is wrong (the text's length: it ended too soon). */
  offset: number;
  /** 1-based, counted as an editor does (a line ends at \n). */
  line: number;
  column: number;
}

export type JsonParseResult = { ok: true; value: unknown } | { ok: false; problem: JsonProblem };

/** A nesting deeper than this is reported there (JSON.parse accepts it; settings are 2 levels deep). */
const MAX_DEPTH = 512;

class Refusal extends Error {
  constructor(
    readonly expected: string,
    readonly offset: number,
  ) {
    super(`expected ${expected} at ${offset}`);
  }
}

class Scanner {
  private at = 0;

  constructor(private readonly text: string) {}

  document(): void {
    this.value(0);
    this.whitespace();
    if (this.at < this.text.length) throw new Refusal("nothing more after the JSON value", this.at);
  }

  private whitespace(): void {
    while (this.at < this.text.length && " \t\n\r".includes(this.text[this.at]!)) this.at++;
  }

  private value(depth: number): void {
    this.whitespace();
    const c = this.text[this.at];
    if (depth > MAX_DEPTH) throw new Refusal("less nesting", this.at);
    if (c === "{") return this.object(depth);
    if (c === "[") return this.array(depth);
    if (c === '"') return this.string();
    if (c === "-" || (c !== undefined && c >= "0" && c <= "9")) return this.number();
    for (const word of ["true", "false", "null"]) {
      if (this.text.startsWith(word, this.at)) {
        this.at += word.length;
        return;
      }
    }
    throw new Refusal("a value (an object, array, double-quoted string, number, true, false or null)", this.at);
  }

  private object(depth: number): void {
    this.at++; // {
    this.whitespace();
    if (this.text[this.at] === "}") {
      this.at++;
      return;
    }
    for (;;) {
      this.whitespace();
      if (this.text[this.at] !== '"') throw new Refusal("a double-quoted property name", this.at);
      this.string();
      this.whitespace();
      if (this.text[this.at] !== ":") throw new Refusal("':' after the property name", this.at);
      this.at++;
      this.value(depth + 1);
      this.whitespace();
      const c = this.text[this.at];
      this.at++;
      if (c === "}") return;
      if (c !== ",") throw new Refusal("',' or '}' after the property value", this.at - 1);
    }
  }

  private array(depth: number): void {
    this.at++; // [
    this.whitespace();
    if (this.text[this.at] === "]") {
      this.at++;
      return;
    }
    for (;;) {
      this.value(depth + 1);
      this.whitespace();
      const c = this.text[this.at];
      this.at++;
      if (c === "]") return;
      if (c !== ",") throw new Refusal("',' or ']' after the array element", this.at - 1);
    }
  }

  private string(): void {
    this.at++; // "
    for (;;) {
      const c = this.text[this.at];
      if (c === undefined) throw new Refusal("the closing '\"' of the string", this.at);
      if (c === '"') {
        this.at++;
        return;
      }
      if (c < " ") throw new Refusal("no control character (a line break or tab) inside a string: write \\n or \\t", this.at);
      if (c === "\\") {
        const escaped = this.text[this.at + 1];
        if (escaped !== undefined && '"\\/bfnrt'.includes(escaped)) this.at += 2;
        else if (escaped === "u" && /^[0-9a-fA-F]{4}$/.test(this.text.slice(this.at + 2, this.at + 6))) this.at += 6;
        else throw new Refusal('an escape (\\", \\\\, \\/, \\b, \\f, \\n, \\r, \\t or \\u and 4 hex digits)', this.at);
        continue;
      }
      this.at++;
    }
  }

  private number(): void {
    const match = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(this.text.slice(this.at));
    if (!match) throw new Refusal("a number", this.at);
    this.at += match[0].length;
  }
}

function positionOf(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const lineStart = before.lastIndexOf("\n") + 1;
  return { line: before.split("\n").length, column: offset - lineStart + 1 };
}

/** JSON.parse's value, or where and why the text is not JSON. */
export function parseJsonText(text: string): JsonParseResult {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    // JSON.parse refused: find where. Should the scanner accept what JSON.parse did not, the problem is put at the end.
  }
  let refusal = new Refusal("valid JSON", text.length);
  try {
    new Scanner(text).document();
  } catch (err) {
    if (!(err instanceof Refusal)) throw err;
    refusal = err;
  }
  return { ok: false, problem: { expected: refusal.expected, offset: refusal.offset, ...positionOf(text, refusal.offset) } };
}

/** "line 2, column 5 (character 17): expected …", for an error message; the text itself is never quoted. */
export function describeJsonProblem(problem: JsonProblem): string {
  return `at line ${problem.line}, column ${problem.column} (character ${problem.offset + 1}): expected ${problem.expected}`;
}
