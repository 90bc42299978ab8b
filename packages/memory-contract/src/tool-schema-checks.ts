import { Ajv, type ValidateFunction } from "ajv";

/** OpenAI-style function names: what strict model APIs accept. */
export const FUNCTION_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Unwrap the `{type: "function", function: {...}}` form the host also accepts. */
export function unwrapToolSchema(schema: unknown): unknown {
  if (isPlainObject(schema) && schema.type === "function" && isPlainObject(schema.function)) return schema.function;
  return schema;
}

/** The tool's name, or a placeholder for reports when it has none. */
export function toolLabel(schema: unknown): string {
  const s = unwrapToolSchema(schema);
  return isPlainObject(s) && typeof s.name === "string" ? JSON.stringify(s.name) : "(unnamed tool)";
}

/**
 * Problems that make an OpenAI-style API reject the tool definition (empty when it is fine):
 * name pattern, non-empty description, `parameters` an object schema with `type: "object"`,
 * `properties` an object and `required` a list of declared property names.
 */
export function functionToolProblems(schema: unknown): string[] {
  const s = unwrapToolSchema(schema);
  const label = toolLabel(schema);
  if (!isPlainObject(s)) return [`tool schema ${label} is not an object`];
  const problems: string[] = [];
  if (typeof s.name !== "string" || !FUNCTION_NAME_PATTERN.test(s.name)) {
    problems.push(`tool name ${label} does not match ^[a-zA-Z0-9_-]{1,64}$`);
  }
  if (typeof s.description !== "string" || s.description.trim() === "") {
    problems.push(`tool ${label} has no description`);
  }
  const params = s.parameters;
  if (!isPlainObject(params)) {
    problems.push(`tool ${label} parameters is not an object`);
    return problems;
  }
  if (params.type !== "object") problems.push(`tool ${label} parameters.type is ${JSON.stringify(params.type)}, expected "object"`);
  if (params.properties !== undefined && !isPlainObject(params.properties)) {
    problems.push(`tool ${label} parameters.properties is not an object`);
  }
  if (params.required !== undefined) {
    const props = isPlainObject(params.properties) ? params.properties : {};
    if (!Array.isArray(params.required) || !params.required.every((r) => typeof r === "string")) {
      problems.push(`tool ${label} parameters.required is not a list of strings`);
    } else {
      for (const r of params.required as string[]) {
        if (!(r in props)) problems.push(`tool ${label} requires ${JSON.stringify(r)}, which is not in properties`);
      }
    }
  }
  return problems;
}

/** A JSON Schema validator factory configured like the hosts use it (lenient keywords). */
export function createSchemaValidator(): Ajv {
  return new Ajv({ strict: false, allErrors: true, validateFormats: false });
}

/** Compile a tool's `parameters`; returns the validator or the compile error message. */
export function compileParameters(ajv: Ajv, parameters: unknown): { validate?: ValidateFunction; error?: string } {
  if (!isPlainObject(parameters)) return { error: "parameters is not an object" };
  // A $schema pointing at another draft would make Ajv look up a meta-schema; the keywords matter, not the tag.
  const { $schema: _ignored, ...rest } = parameters;
  try {
    return { validate: ajv.compile(rest) };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}

function sampleValue(schema: unknown, depth: number): unknown {
  if (!isPlainObject(schema) || depth > 4) return "contract test";
  if ("const" in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  if ("default" in schema) return schema.default;
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case "string":
      return "contract test";
    case "integer":
    case "number":
      return typeof schema.minimum === "number" ? schema.minimum : 1;
    case "boolean":
      return true;
    case "array":
      return [];
    case "null":
      return null;
    case "object":
      return sampleArguments(schema, depth + 1);
    default:
      return "contract test";
  }
}

/** A small argument object meant to satisfy `parameters`: required keys with typed sample values. */
export function sampleArguments(parameters: unknown, depth = 0): Record<string, unknown> {
  if (!isPlainObject(parameters)) return {};
  const props = isPlainObject(parameters.properties) ? parameters.properties : {};
  const required = Array.isArray(parameters.required) ? parameters.required.filter((r): r is string => typeof r === "string") : [];
  const args: Record<string, unknown> = {};
  for (const key of required) args[key] = sampleValue(props[key], depth);
  return args;
}

/** A value of the wrong JSON type for `schema`. */
function wrongTypeValue(schema: unknown): unknown {
  const type = isPlainObject(schema) ? schema.type : undefined;
  if (type === "object" || type === "array") return "not-an-object";
  return { unexpected: ["object", "instead of", String(type ?? "a value")] };
}

/**
 * Argument objects that violate `parameters`: the required keys missing, then each declared
 * property given a value of the wrong type. Each candidate is labelled for reports.
 */
export function invalidArgumentCandidates(
  parameters: unknown,
): Array<{ label: string; args: Record<string, unknown>; mustError: boolean }> {
  if (!isPlainObject(parameters)) return [];
  const candidates: Array<{ label: string; args: Record<string, unknown>; mustError: boolean }> = [];
  const required = Array.isArray(parameters.required) ? parameters.required : [];
  // Missing required keys is unambiguous, so an error string is mandatory; for wrong types a
  // lenient provider may coerce, so only "returns a string, never throws" is demanded.
  if (required.length > 0) candidates.push({ label: "no arguments ({})", args: {}, mustError: true });
  const props = isPlainObject(parameters.properties) ? parameters.properties : {};
  const valid = sampleArguments(parameters);
  for (const [key, schema] of Object.entries(props).slice(0, 5)) {
    candidates.push({ label: `${key} of the wrong type`, args: { ...valid, [key]: wrongTypeValue(schema) }, mustError: false });
  }
  return candidates;
}

/**
 * True when a tool result reads as an error: a JSON object with an `error` key (or
 * `ok`/`success` false), or plain text mentioning an error.
 */
export function isErrorString(value: unknown): boolean {
  if (typeof value !== "string" || value.trim() === "") return false;
  try {
    const parsed: unknown = JSON.parse(value);
    if (isPlainObject(parsed)) {
      if (parsed.error !== undefined && parsed.error !== null && parsed.error !== false) return true;
      if (parsed.ok === false || parsed.success === false) return true;
    }
  } catch {
    // Not JSON: fall back to the wording.
  }
  return /\b(error|unknown|invalid|unsupported|not supported|missing)\b/i.test(value);
}
