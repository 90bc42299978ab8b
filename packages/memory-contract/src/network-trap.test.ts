import dns from "node:dns";
import { request } from "node:http";
import net from "node:net";
import { describe, expect, it } from "vitest";
import { withNetworkTrap } from "./network-trap.js";

describe("withNetworkTrap", () => {
  it("records and blocks fetch without an unhandled rejection", async () => {
    const { value, attempts } = withNetworkTrap(() => {
      void fetch("http://127.0.0.1:9/health").catch(() => undefined);
      return true;
    });
    expect(value).toBe(true);
    expect(attempts).toEqual([{ api: "fetch", target: "http://127.0.0.1:9/health" }]);
  });

  it("traps ESM named imports of node:http and the CJS objects of net and dns", () => {
    const { error, attempts } = withNetworkTrap(() => {
      try {
        net.connect({ host: "127.0.0.1", port: 9 });
      } catch {
        // recorded anyway
      }
      try {
        dns.lookup("example.invalid", () => undefined);
      } catch {
        // recorded anyway
      }
      return request("http://127.0.0.1:9/");
    });
    expect(attempts.map((a) => a.api)).toEqual(["net.connect", "dns.lookup", "http.request"]);
    expect(attempts[0]?.target).toBe("127.0.0.1:9");
    expect(String(error)).toContain("network access (http.request) is not allowed");
  });

  it("restores the real functions afterwards", () => {
    const before = { fetch: globalThis.fetch, connect: net.connect, request };
    withNetworkTrap(() => undefined);
    expect({ fetch: globalThis.fetch, connect: net.connect, request }).toEqual(before);
  });
});
