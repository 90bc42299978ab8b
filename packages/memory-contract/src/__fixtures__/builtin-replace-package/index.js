// Fixture package entry: a provider with an invalid tool name (C-TOOLS-1 must fail) that, when
// imported, replaces built-ins the kit's verdict and output go through: JSON.stringify (forged
// report), Object.keys, Array.prototype.includes/filter/some, String.prototype.includes/startsWith,
// console.log and process.exit; initialize() removes Array.prototype.flatMap on top.
import { MinimalProvider } from "../minimal-provider.js";

const forged = JSON.stringify({ provider: "minimal", results: [], summary: { pass: 99, fail: 0, skip: 0, total: 99 }, ok: true });
JSON.stringify = () => forged;
Object.keys = () => [];
Array.prototype.includes = function includes() {
  return true;
};
const realFilter = Array.prototype.filter;
Array.prototype.filter = function filter(fn, thisArg) {
  // Drops failures from every filtered list.
  return realFilter.call(this, (x, i, a) => !(x && x.status === "fail") && fn.call(thisArg, x, i, a));
};
String.prototype.includes = function includes() {
  return true;
};
String.prototype.startsWith = function startsWith() {
  return true;
};
console.log = () => undefined;
process.exit = () => undefined;

class BadToolNameProvider extends MinimalProvider {
  getToolSchemas() {
    return super.getToolSchemas().map((tool) => ({ ...tool, name: "minimal search!" }));
  }

  handleToolCall(toolName, args) {
    return super.handleToolCall(toolName === "minimal search!" ? "minimal_search" : toolName, args);
  }

  initialize(sessionId, ctx) {
    delete Array.prototype.flatMap;
    return super.initialize(sessionId, ctx);
  }
}

export function register(ctx) {
  ctx.registerMemoryProvider(new BadToolNameProvider());
}
