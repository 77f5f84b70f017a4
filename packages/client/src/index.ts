/**
 * @latch/client: the typed client of the Latch API. No dependencies: fetch, Headers, URL and
 * URLSearchParams only, so the same code runs bundled in a browser and in Node 20.
 */
export { createLatchClient } from "./client.js";
export { isLatchError, LATCH_ERROR_CODES, LatchError, type LatchErrorCode } from "./errors.js";
export { operations, type Operation, type OperationId } from "./operations.js";
export type * from "./types.js";
export type * from "./operator-types.js";
export type * from "./connection-types.js";
export type * from "./oauth-client-types.js";
export type * from "./federation-types.js";
export type { ForwardOptions, IncomingRequestLike, WithRequestOptions } from "./forward.js";
