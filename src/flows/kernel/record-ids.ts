/** contract.md#d8: record ids are random integers in [10^14, 2^53): not sequential, so ids reveal no member count. */
import { randomIntBetween } from "../../core/random.js";
import type { Deps } from "../../deps.js";

const RECORD_ID_MIN = 10 ** 14;
const RECORD_ID_MAX = 2 ** 53;

export function newRecordId(deps: Pick<Deps, "random">): number {
  return randomIntBetween(deps.random, RECORD_ID_MIN, RECORD_ID_MAX);
}
