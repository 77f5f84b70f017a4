/**
 * Types shared by the load generator (load.ts, run as its own process) and whoever drives it
 * (load-client.ts). Types only: importing this file runs nothing.
 */

export interface LoadRequest {
  method: "GET" | "POST";
  /** Path and query, starting with "/". */
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface LoadSpec {
  /**
   * Origin, e.g. "http://127.0.0.1:40123"; or several (closed loop only), the connections spread
   * over them round-robin as behind a load balancer, requests still handed out through one index.
   */
  url: string | string[];
  connections: number;
  /** Run for this long ... (exactly one of durationSeconds and amount) */
  durationSeconds?: number;
  /** ... or stop after this many requests. With amount = requests.length each entry is sent once. */
  amount?: number;
  /**
   * Open loop at this many requests/second, evenly paced: one request every 1000/rate ms (within
   * about ±0.5 ms), sent whether or not earlier ones have been answered, over at most `connections`
   * keep-alive sockets (the rest queue in the client). Latency runs from each request's scheduled
   * send, so queueing counts. Without a rate: closed loop (autocannon), every connection always busy.
   */
  rate?: number;
  /** Run the same requests this long first and discard the result; the measured run starts again
   *  from the first entry, so not for single-use requests. With a rate, the warm-up runs at that
   *  rate and the measured run follows it without a gap. */
  warmupSeconds?: number;
  /**
   * Handed out round-robin through one shared index. In a path, a header value or a body,
   * `{{seq}}` becomes the request's sequence number (warm-up included, from seqStart) and `{{ip}}`
   * the IPv4 address numbered seq in 10.0.0.0/8: a fresh email or client IP per request however
   * long the run, without a list that long.
   */
  requests: LoadRequest[];
  /** The first `{{seq}}` (default 0), so that runs of the same template get distinct numbers. */
  seqStart?: number;
}

export interface LoadResult {
  /** Responses received (any status). */
  requests: number;
  /** requests / seconds. */
  rps: number;
  /** Latency percentiles in ms, rounded to 2 decimals: exact (nearest rank over every sample) over
   *  responses of any status; timeouts and connection errors have no latency. Latency runs to the
   *  response's last byte from the request's write (closed loop) or its scheduled send (rate). */
  p50: number;
  p99: number;
  /** Responses with a status outside 2xx. */
  non2xx: number;
  /** Responses by status code, e.g. {"200": 950, "429": 3}: whoever drives the run judges them. */
  statuses: Record<string, number>;
  /** Connection errors, timeouts included. A request unanswered after 10 s is a timeout. */
  errors: number;
  timeouts: number;
  /** From the start of the measured run to its last response. */
  seconds: number;
}
