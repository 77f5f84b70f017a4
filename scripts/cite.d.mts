/** Types of scripts/cite.mjs, for the TypeScript that imports it (test/citations.test.ts). */
export function citationRewriter(contractAnchors?: ReadonlySet<string>): (text: string) => string;
export function commentRanges(fileName: string, text: string): Array<[number, number]>;
export function rewriteFile(fileName: string, text: string, rewrite?: (text: string) => string): string;
