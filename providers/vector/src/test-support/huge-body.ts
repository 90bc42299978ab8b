import type http from "node:http";

/**
 * Answer 200 with `prefix` followed by `totalBytes` of spaces, written as fast as the client reads
 * (a broken or hostile server that never stops sending). Returns a getter of the bytes sent so far.
 */
export function sendHugeBody(res: http.ServerResponse, prefix: string, totalBytes = 200 * (1 << 20)): () => number {
  let sent = 0;
  res.writeHead(200, { "content-type": "application/json" });
  const chunk = Buffer.alloc(1 << 20, 0x20);
  const pump = (): void => {
    while (sent < totalBytes && !res.destroyed) {
      sent += chunk.length;
      if (!res.write(chunk)) return void res.once("drain", pump);
    }
    res.end();
  };
  res.write(prefix);
  pump();
  return () => sent;
}
