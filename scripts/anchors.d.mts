/** Types of scripts/anchors.mjs, for the TypeScript that imports it (test/citations.test.ts). */
export function slugOf(heading: string): string;
export function anchorsOf(markdown: string): Set<string>;
export function readDocAnchors(dir?: string | URL): Map<string, Set<string>>;
