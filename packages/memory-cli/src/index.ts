/**
 * @hermes/memory-cli — the `hermes-memory` command line as a library, for hosts that embed it or
 * test it in-process. The binary (`hermes-memory`) is `dist/bin.js`.
 */
export { runCli, createProgram, exitCodeFor, CLI_NAME } from "./program.js";
export { CliUsageError } from "./cli-usage-error.js";
export { ExitCode, type ExitCodeValue } from "./exit-codes.js";
export { processIo, type CliIo } from "./cli-io.js";
export type { CliContext, GlobalOptions } from "./cli-context.js";
/** What a provider's `registerCli` receives; defined in `@hermes/memory-core` and re-exported here. */
export type { ProviderCliContext, ProviderCliIo } from "@hermes/memory-core";
export {
  DEMO_CONVERSATION,
  recallMentions,
  type DemoConversation,
  type DemoSession,
  type DemoTurn,
  type DemoQuestion,
  type DemoMemoryNote,
} from "./demo-conversation.js";
export type { DemoReport, DemoQuestionReport, DemoSessionReport } from "./commands/demo.js";
export type { MemoryStatusReport, StatusSetting } from "./commands/memory-status.js";
export type { ProviderListing } from "./commands/plugins.js";
export type { PluginToggleReport } from "./commands/plugins-enable.js";
export { CLI_VERSION } from "./version.js";
