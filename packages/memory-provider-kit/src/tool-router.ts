/**
 * Tool-call plumbing every provider needs: validate arguments against the tool's JSON schema,
 * route to the handler, and always answer with a JSON string (`{"error": "..."}` on failure),
 * never a throw.
 */
import { Ajv, type ValidateFunction } from "ajv";
import { describeError, type ToolSchema } from "@hermes/memory-core";

/** One tool's implementation: gets the validated arguments, returns a JSON-serialisable result. */
export type ToolHandler<R = unknown> = (args: Record<string, unknown>) => R;

/** Options for `ToolRouter`. */
export interface ToolRouterOptions {
  /** Who answers (used in messages), e.g. `sqlite memory`. */
  owner: string;
  /** The tool schemas this router validates against (bare OpenAI function form). */
  schemas: readonly ToolSchema[];
}

/** The JSON error string every tool returns on failure. */
export function toolError(message: string): string {
  return JSON.stringify({ error: message });
}

/** Validates and routes tool calls for one provider. Validators compile on first use. */
export class ToolRouter {
  private validators: Map<string, ValidateFunction> | undefined;

  /** See `ToolRouterOptions`. */
  constructor(private readonly options: ToolRouterOptions) {}

  /** True when `name` is one of this router's tools. */
  handles(name: string): boolean {
    return this.options.schemas.some((s) => s.name === name);
  }

  /**
   * Check `args` against the tool's schema. Returns the error message (unknown tool, or every
   * schema violation joined with `; `), or `null` when the call is valid.
   */
  validate(name: string, args: unknown): string | null {
    const validate = this.validatorFor(name);
    if (!validate) return `${this.options.owner} does not handle tool ${name}`;
    if (validate(args ?? {})) return null;
    const detail = (validate.errors ?? []).map((e) => `${e.instancePath || "(arguments)"} ${e.message ?? "is invalid"}`).join("; ");
    return `Invalid arguments for ${name}: ${detail}`;
  }

  /**
   * Validate, then run the matching handler synchronously; its result is JSON-stringified. A
   * handler may return a string (sent as is). Unknown tools, invalid arguments, missing handlers
   * and thrown errors all come back as `{"error": ...}`.
   */
  run(name: string, args: unknown, handlers: Readonly<Record<string, ToolHandler>>): string {
    try {
      const invalid = this.validate(name, args);
      if (invalid) return toolError(invalid);
      const handler = handlers[name];
      if (!handler) return toolError(`${this.options.owner} does not handle tool ${name}`);
      return serialise(handler((args ?? {}) as Record<string, unknown>));
    } catch (error) {
      return toolError(describeError(error));
    }
  }

  /** `run` for handlers that may return a promise; the promise never rejects. */
  async runAsync(name: string, args: unknown, handlers: Readonly<Record<string, ToolHandler<unknown>>>): Promise<string> {
    try {
      const invalid = this.validate(name, args);
      if (invalid) return toolError(invalid);
      const handler = handlers[name];
      if (!handler) return toolError(`${this.options.owner} does not handle tool ${name}`);
      return serialise(await handler((args ?? {}) as Record<string, unknown>));
    } catch (error) {
      return toolError(describeError(error));
    }
  }

  private validatorFor(name: string): ValidateFunction | undefined {
    if (!this.validators) {
      const ajv = new Ajv({ allErrors: true, strict: false });
      this.validators = new Map(this.options.schemas.map((s) => [s.name, ajv.compile(s.parameters)]));
    }
    return this.validators.get(name);
  }
}

function serialise(result: unknown): string {
  return typeof result === "string" ? result : JSON.stringify(result ?? null);
}
