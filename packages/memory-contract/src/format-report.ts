import { CONTRACT_GROUPS } from "./clauses.js";
import type { ContractReport, ContractResult } from "./contract-report.js";

const MARK: Record<ContractResult["status"], string> = { pass: "PASS", fail: "FAIL", skip: "SKIP" };

/**
 * The human-readable report the CLI prints: one block per group, one line per clause, with the
 * reason under failures and skips and the hint under failures. Plain text, no colours.
 */
export function formatContractReport(report: ContractReport): string {
  const lines: string[] = [`Memory provider contract: ${report.provider}`, ""];
  for (const group of CONTRACT_GROUPS) {
    const results = report.results.filter((r) => r.group === group);
    if (results.length === 0) continue;
    lines.push(group);
    for (const r of results) {
      lines.push(`  ${MARK[r.status]}  ${r.id}  ${r.title}`);
      if (r.status === "fail") {
        if (r.reason) lines.push(`        why:  ${r.reason}`);
        lines.push(`        hint: ${r.hint}`);
      } else if (r.status === "skip" && r.reason) {
        lines.push(`        skipped: ${r.reason}`);
      }
    }
    lines.push("");
  }
  const { pass, fail, skip, total } = report.summary;
  lines.push(`${pass} passed, ${fail} failed, ${skip} skipped (${total} clauses)`);
  return lines.join("\n");
}
