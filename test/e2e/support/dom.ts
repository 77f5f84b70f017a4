/**
 * The few DOM types the in-page callbacks use. The project's tsconfig has no DOM lib (it is a
 * server), and adding it would type every src/ file as if it ran in a browser. A callback reads
 * `globalThis as unknown as PageWindow`; the cast is erased, so the page sees plain `globalThis`.
 *
 * Callbacks passed to page.evaluate must not declare named inner functions (`const f = () => …`):
 * tsx compiles with esbuild's keepNames, which wraps them in a `__name` helper the page lacks.
 */
export interface PageElement {
  tagName: string;
  matches(selector: string): boolean;
  getAttribute(name: string): string | null;
}

export interface PageStyle {
  outlineStyle: string;
  outlineWidth: string;
  outlineColor: string;
  boxShadow: string;
}

export interface CspEvent {
  effectiveDirective: string;
  blockedURI: string;
  sourceFile: string;
  lineNumber: number;
  documentURI: string;
}

/** An element's box (getBoundingClientRect, a range's getClientRects), in CSS pixels of the viewport. */
export interface PageBox {
  left: number;
  right: number;
  top: number;
  bottom: number;
  width: number;
  height: number;
}

export interface PageWindow {
  document: {
    activeElement: PageElement | null;
    body: PageElement | null;
    addEventListener(type: "securitypolicyviolation", listener: (event: CspEvent) => void): void;
  };
  getComputedStyle(element: PageElement): PageStyle;
}
