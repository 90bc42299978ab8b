// Fixture package entry: the minimal provider with a heartbeat interval shutdown() never clears.
import { MinimalProvider } from "../minimal-provider.js";

class TimerLeakProvider extends MinimalProvider {
  initialize(sessionId, ctx) {
    super.initialize(sessionId, ctx);
    setInterval(() => undefined, 60_000);
  }
}

export function register(ctx) {
  ctx.registerMemoryProvider(new TimerLeakProvider());
}
