/**
 * Real servers on loopback for the tests that need one on the other side of the wire (a siteverify
 * or HIBP stand-in, a webhook receiver, a redirect): listening on a free port, an address where
 * nothing listens, and an HTTP server that records every request with its body.
 */
import { once } from "node:events";
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo, Server } from "node:net";

/** Listens on a free port of 127.0.0.1; returns http://127.0.0.1:<port>. */
export async function listenOnLoopback(server: Server): Promise<string> {
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** http://127.0.0.1:<port> of a port that was just free and is now closed: connecting to it is refused. */
export async function closedPortUrl(): Promise<string> {
  const closed = createServer();
  const url = await listenOnLoopback(closed);
  closed.close();
  await once(closed, "close");
  return url;
}

export interface RecordedRequest {
  method: string;
  /** The path and query, as sent. */
  path: string;
  headers: IncomingHttpHeaders;
  /** The whole body as UTF-8 ("" for none). */
  body: string;
}

export interface LocalServer {
  /** http://127.0.0.1:<port>, without a path. */
  url: string;
  port: number;
  /** Every request so far, in arrival order, recorded once its body has arrived. */
  requests: RecordedRequest[];
  /** Ends open connections (a request left unanswered on purpose too) and closes the server. */
  close(): Promise<void>;
}

/** An HTTP server on loopback that records each request, then lets `answer` reply (or never reply). */
export async function startLocalServer(answer: (request: RecordedRequest, response: ServerResponse) => void): Promise<LocalServer> {
  const requests: RecordedRequest[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const recorded = { method: request.method ?? "", path: request.url ?? "", headers: request.headers, body: Buffer.concat(chunks).toString("utf8") };
      requests.push(recorded);
      answer(recorded, response);
    });
  });
  const url = await listenOnLoopback(server);
  return {
    url,
    port: Number(new URL(url).port),
    requests,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
