/**
 * Units of time in milliseconds. Apart from clock.ts (which re-exports them) so that rules.ts,
 * and through it the hosted pages' browser script, can use them without Node's timers.
 */
export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;
