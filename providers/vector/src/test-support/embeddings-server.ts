import http from "node:http";
import type { AddressInfo } from "node:net";

/** One request the server received. */
export interface EmbeddingsRequest {
  body: { model: string; input: string[]; dimensions?: number };
  auth: string | undefined;
}

/** What the server does with a request: answer a status (a 429 with `Retry-After: 0`), a status with the given `Retry-After`, or never answer. */
export type EmbeddingsAction = number | "hang" | { status: number; retryAfter: string };

/** A running loopback server: its `/v1` base URL and the requests it received. */
export interface EmbeddingsServer {
  url: string;
  seen: EmbeddingsRequest[];
}

const running = new Set<http.Server>();

/**
 * A loopback OpenAI-compatible /v1/embeddings server; `plan` returns an {@link EmbeddingsAction}
 * for request number `n` (1-based) and its inputs. Answers with deterministic fake embeddings of
 * `dims` numbers: one-hot-ish on the text length, returned out of order. Close every server
 * started with {@link closeEmbeddingsServers}.
 */
export async function startEmbeddingsServer(
  dims: number,
  plan: (n: number, input: string[]) => EmbeddingsAction = () => 200,
): Promise<EmbeddingsServer> {
  const seen: EmbeddingsRequest[] = [];
  const server = http.createServer((req, res) => {
    let raw = "";
    req.on("data", (c: Buffer) => (raw += c.toString()));
    req.on("end", () => {
      const body = JSON.parse(raw) as EmbeddingsRequest["body"];
      seen.push({ body, auth: req.headers.authorization });
      const action = plan(seen.length, body.input);
      if (action === "hang") return; // never answer
      if (action !== 200) {
        const status = typeof action === "number" ? action : action.status;
        const retryAfter = typeof action === "number" ? (action === 429 ? "0" : undefined) : action.retryAfter;
        res.writeHead(status, { "content-type": "application/json", ...(retryAfter !== undefined ? { "retry-after": retryAfter } : {}) });
        res.end(JSON.stringify({ error: { message: `status ${status}` } }));
        return;
      }
      const data = body.input.map((text, index) => {
        const v = new Array(dims).fill(0);
        v[text.length % dims] = 3;
        v[(text.length + 1) % dims] = 4;
        return { object: "embedding", index, embedding: v };
      });
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ object: "list", data: data.reverse(), model: body.model }));
    });
  });
  running.add(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, seen };
}

/** Close every server {@link startEmbeddingsServer} started (hanging requests are cut). */
export async function closeEmbeddingsServers(): Promise<void> {
  const servers = [...running];
  running.clear();
  await Promise.all(
    servers.map((server) => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    }),
  );
}
