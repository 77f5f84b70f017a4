/** contract.md#d8: record ids are random integers in RECORD_ID_RANGE: not sequential, so ids reveal no member count. */
import { randomIntBetween } from "../../core/random.js";
import type { Deps } from "../../deps.js";
import { RECORD_ID_RANGE } from "../../rules.js";

export function newRecordId(deps: Pick<Deps, "random">): number {
  return randomIntBetween(deps.random, RECORD_ID_RANGE.min, RECORD_ID_RANGE.max);
}
