// Fixture package entry: the minimal provider with a tool name strict model APIs reject.
import { MinimalProvider } from "../minimal-provider.js";

class BadToolNameProvider extends MinimalProvider {
  getToolSchemas() {
    return super.getToolSchemas().map((tool) => ({ ...tool, name: "minimal search!" }));
  }

  handleToolCall(toolName, args) {
    return super.handleToolCall(toolName === "minimal search!" ? "minimal_search" : toolName, args);
  }
}

export function register(ctx) {
  ctx.registerMemoryProvider(new BadToolNameProvider());
}
