import { HermesMemoryError } from "@hermes/memory-core";

/**
 * Run `work` but give up after `ms` milliseconds with a `PROVIDER_TIMEOUT` error. The abandoned
 * call keeps running detached; its late result or rejection is swallowed so it can never become an
 * unhandled rejection that takes the server down. The timer does not keep the process alive.
 */
export async function boundedProviderCall<T>(label: string, ms: number, work: () => PromiseLike<T> | T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const attempt = (async () => work())();
  attempt.catch(() => {});
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new HermesMemoryError({
            code: "PROVIDER_TIMEOUT",
            message: `${label} did not finish within ${ms} ms; the memory provider may be stuck. Check it with \`hermes-memory memory status\`, or raise the limit with --tool-timeout.`,
          }),
        ),
      ms,
    );
    timer.unref?.();
  });
  try {
    return await Promise.race([attempt, deadline]);
  } finally {
    if (timer) clearTimeout(timer);
  }
}
