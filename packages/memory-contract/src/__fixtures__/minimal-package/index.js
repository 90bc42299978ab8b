// Fixture package entry: registers the correct minimal provider.
import { MinimalProvider } from "../minimal-provider.js";

export function register(ctx) {
  ctx.registerMemoryProvider(new MinimalProvider());
}
