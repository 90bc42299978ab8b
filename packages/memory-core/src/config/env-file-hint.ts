import type { MemoryProvider } from "../provider.js";
import { envFilePath } from "./env-file.js";
import { readEnvFileSync } from "./secrets.js";
import { defaultEnvVarName, readConfigSchema } from "./setup.js";

function isSet(value: string | undefined): boolean {
  return value !== undefined && value.trim() !== "";
}

/**
 * Why an unavailable provider may not see a key setup saved: the variables of its config fields
 * (`envVar`, or the generated name of a secret) that are set in the profile's `$HERMES_HOME/.env`
 * but not in `env` (default `process.env`). Setup writes keys to `.env` and never to the process
 * environment, so a provider reading `process.env` reports itself unavailable although the key is
 * there; `getEnv` reads the profile `.env` first. Returns a sentence naming the variables and
 * `getEnv` from `@hermes/memory-core` (with a leading space, to append to a message), or `""` when
 * no such variable exists or the schema cannot be read. Reads `.env` bounded and never throws.
 */
export function envFileOnlyHint(provider: MemoryProvider, hermesHome: string, env: NodeJS.ProcessEnv = process.env): string {
  let names: string[];
  try {
    names = readConfigSchema(provider)
      .map((field) =>
        typeof field.envVar === "string" && field.envVar.trim() !== ""
          ? field.envVar.trim()
          : field.secret
            ? defaultEnvVarName(provider.name, field.key)
            : "",
      )
      .filter((name) => name !== "");
  } catch {
    return "";
  }
  const fromFile = readEnvFileSync(hermesHome);
  const hidden = [...new Set(names)].filter((name) => isSet(fromFile[name]) && !isSet(env[name]));
  if (hidden.length === 0) return "";
  const list = hidden.join(", ");
  const first = hidden[0]!;
  const verb = hidden.length === 1 ? "is" : "are";
  return ` ${list} ${verb} set in ${envFilePath(hermesHome)} but not in the process environment, so a provider reading process.env.${first} does not see ${hidden.length === 1 ? "it" : "them"}: read ${hidden.length === 1 ? "it" : "them"} with getEnv("${first}") from @hermes/memory-core (the profile's .env, then process.env), or export ${hidden.length === 1 ? "it" : "them"} before starting the host.`;
}
