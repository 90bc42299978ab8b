/**
 * @hermes/memory-contract — the framework-free contract kit. `runMemoryProviderContract` runs every
 * clause and returns structured results; `@hermes/memory-contract/vitest` wraps it as tests.
 */
export { runMemoryProviderContract } from "./run-contract.js";
export {
  CONTRACT_CLAUSES,
  CONTRACT_GROUPS,
  getClause,
  type ContractClause,
  type ContractGroup,
  type ClauseRequirement,
  type DeclaredCapability,
} from "./clauses.js";
export {
  resolveTimeouts,
  type MemoryProviderContractSetup,
  type ContractCapabilities,
  type ContractTimeouts,
  type ResolvedTimeouts,
  type ContractRunOptions,
  type ProviderFactoryContext,
  type BreakStorageContext,
} from "./contract-setup.js";
export { summarizeResults, type ContractReport, type ContractResult, type ContractSummary, type ClauseStatus } from "./contract-report.js";
export { formatContractReport } from "./format-report.js";
export { createSetupFromPackage, resolvePackageDir, inferCapabilities, type PackageContractSetup } from "./package-setup.js";
export { runContractCli, type CliIo } from "./cli.js";
