import { describe, expect, it } from "vitest";
import { formatContractReport } from "./format-report.js";
import type { ContractReport } from "./contract-report.js";

describe("formatContractReport", () => {
  it("groups clauses and shows reasons and hints", () => {
    const report: ContractReport = {
      provider: "demo",
      ok: false,
      summary: { pass: 1, fail: 1, skip: 1, total: 3 },
      results: [
        { id: "C-TOOLS-1", group: "TOOLS", title: "tools ok", status: "fail", reason: "bad name", hint: "rename it", durationMs: 1 },
        { id: "C-TOOLS-2", group: "TOOLS", title: "unknown tool", status: "pass", hint: "h", durationMs: 1 },
        { id: "C-RECALL-1", group: "RECALL", title: "recall", status: "skip", reason: "no recall", hint: "h", durationMs: 0 },
      ],
    };
    expect(formatContractReport(report)).toBe(
      [
        "Memory provider contract: demo",
        "",
        "TOOLS",
        "  FAIL  C-TOOLS-1  tools ok",
        "        why:  bad name",
        "        hint: rename it",
        "  PASS  C-TOOLS-2  unknown tool",
        "",
        "RECALL",
        "  SKIP  C-RECALL-1  recall",
        "        skipped: no recall",
        "",
        "1 passed, 1 failed, 1 skipped (3 clauses)",
      ].join("\n"),
    );
  });
});
