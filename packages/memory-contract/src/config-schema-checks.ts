/** Environment variable names `.env` accepts. */
export const ENV_VAR_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

const FIELD_TYPES = new Set(["text", "integer", "number", "boolean", "url"]);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isScalar(value: unknown): boolean {
  return typeof value === "string" || typeof value === "number" || typeof value === "boolean";
}

/** Shape problems of a `getConfigSchema()` result (empty when fine). */
export function configFieldShapeProblems(fields: unknown): string[] {
  if (!Array.isArray(fields)) return ["getConfigSchema() did not return an array"];
  const problems: string[] = [];
  const seen = new Set<string>();
  fields.forEach((field, i) => {
    if (!isPlainObject(field)) {
      problems.push(`field #${i} is not an object`);
      return;
    }
    const at = typeof field.key === "string" && field.key ? `field ${JSON.stringify(field.key)}` : `field #${i}`;
    if (typeof field.key !== "string" || field.key.trim() === "") problems.push(`${at} has no non-empty string key`);
    else if (seen.has(field.key)) problems.push(`${at} is declared twice`);
    else seen.add(field.key);
    for (const key of ["description", "url", "envVar"] as const) {
      if (field[key] !== undefined && typeof field[key] !== "string") problems.push(`${at}.${key} is not a string`);
    }
    for (const key of ["secret", "required", "advanced"] as const) {
      if (field[key] !== undefined && typeof field[key] !== "boolean") problems.push(`${at}.${key} is not a boolean`);
    }
    if (field.type !== undefined && !FIELD_TYPES.has(field.type as string)) {
      problems.push(`${at}.type ${JSON.stringify(field.type)} is not one of text|integer|number|boolean|url`);
    }
    if (field.default !== undefined && !isScalar(field.default)) problems.push(`${at}.default is not a string, number or boolean`);
    if (field.choices !== undefined && (!Array.isArray(field.choices) || !field.choices.every(isScalar))) {
      problems.push(`${at}.choices is not a list of strings, numbers or booleans`);
    }
    if (field.when !== undefined && !isPlainObject(field.when)) problems.push(`${at}.when is not an object`);
    for (const key of ["minimum", "maximum"] as const) {
      if (field[key] !== undefined && typeof field[key] !== "number") problems.push(`${at}.${key} is not a number`);
    }
  });
  return problems;
}

/** Secret fields without a usable `envVar`. */
export function secretEnvVarProblems(fields: readonly Record<string, unknown>[]): string[] {
  const problems: string[] = [];
  for (const field of fields) {
    if (field.secret !== true) continue;
    if (typeof field.envVar !== "string" || field.envVar === "") {
      problems.push(`secret field ${JSON.stringify(field.key)} has no envVar`);
    } else if (!ENV_VAR_PATTERN.test(field.envVar)) {
      problems.push(
        `secret field ${JSON.stringify(field.key)} has envVar ${JSON.stringify(field.envVar)}, which is not a valid variable name`,
      );
    }
  }
  return problems;
}

/** Fields whose `default` is not among their `choices`. */
export function choiceDefaultProblems(fields: readonly Record<string, unknown>[]): string[] {
  const problems: string[] = [];
  for (const field of fields) {
    if (!Array.isArray(field.choices) || field.default === undefined) continue;
    if (!field.choices.includes(field.default)) {
      problems.push(
        `field ${JSON.stringify(field.key)} default ${JSON.stringify(field.default)} is not in choices ${JSON.stringify(field.choices)}`,
      );
    }
  }
  return problems;
}

/** Non-secret values a setup wizard could plausibly save: default, first choice or a typed sample. */
export function sampleConfigValues(fields: readonly Record<string, unknown>[]): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const field of fields) {
    if (field.secret === true || typeof field.key !== "string") continue;
    if (field.default !== undefined) values[field.key] = field.default;
    else if (Array.isArray(field.choices) && field.choices.length > 0) values[field.key] = field.choices[0];
    else if (field.type === "integer" || field.type === "number") values[field.key] = typeof field.minimum === "number" ? field.minimum : 1;
    else if (field.type === "boolean") values[field.key] = true;
    else if (field.type === "url") values[field.key] = "https://contract.example.invalid/v1";
    else values[field.key] = "contract-value";
  }
  return values;
}
