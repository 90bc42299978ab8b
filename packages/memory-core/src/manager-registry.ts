/**
 * Which providers the manager holds and which provider owns each tool: the built-in provider
 * first, at most one external provider, each provider's name read once, tool names checked
 * against the reserved core tools and against each other (first registered wins), and the gate
 * that withholds the external provider's tools and prompt block.
 */
import { HermesMemoryError } from "./errors.js";
import { describeProviderError as describeError, readProviderName } from "./plugin-describe.js";
import type { Logger } from "./logger.js";
import { BUILTIN_PROVIDER_NAME } from "./provider.js";
import type { MemoryProvider, ToolSchema } from "./provider.js";
import { normalizeSpillConfig, type SpillConfig } from "./spill.js";
import { RESERVED_CORE_TOOL_NAMES, normalizeToolSchema } from "./tool-schema.js";

/** The registered providers and their tool routes. */
export class ProviderRegistry {
  /** Registered providers in order; the built-in provider always first. */
  readonly list: MemoryProvider[] = [];
  /**
   * Each provider's name, read once in `add`: a provider's `name` getter may throw or change later
   * (even to `builtin`, which would lift its time bounds); the manager never re-reads it.
   */
  private readonly names = new WeakMap<MemoryProvider, string>();
  private readonly toolRoutes = new Map<string, MemoryProvider>();
  private externalName: string | null = null;
  private capturedSpillConfig: SpillConfig | null = null;
  private externalOn: boolean;

  constructor(
    private readonly logger: Logger,
    private readonly spillOptions: Partial<SpillConfig>,
    externalEnabled: boolean,
  ) {
    this.externalOn = externalEnabled;
  }

  /** The first registered provider with this name, if any. */
  find(name: string): MemoryProvider | undefined {
    return this.list.find((p) => this.nameOf(p) === name);
  }

  /** The name a provider had when it was registered (see `names`). */
  nameOf(provider: MemoryProvider): string {
    return this.names.get(provider) ?? readProviderName(provider) ?? "(unnamed)";
  }

  /**
   * Register a provider (the rules are `MemoryManager.addProvider`'s). Schemas are read and
   * normalised before any state changes, so a throwing `getToolSchemas()` leaves the registry as it was.
   */
  add(provider: MemoryProvider): boolean {
    const providerName = readProviderName(provider);
    if (providerName === null) {
      throw new HermesMemoryError({
        code: "INVALID_PROVIDER",
        message:
          'addProvider() got a provider whose name is not a string (or whose name getter throws); declare the name as a plain string property, e.g. readonly name = "my-memory".',
      });
    }
    const isBuiltin = providerName === BUILTIN_PROVIDER_NAME;
    if (!isBuiltin && this.externalName !== null) {
      this.logger.warn(
        `Rejected memory provider '${providerName}' — external provider '${this.externalName}' is already registered. Only one external memory provider is allowed at a time. Configure which one via memory.provider in config.yaml.`,
      );
      return false;
    }
    // Read and normalise every schema before any state changes: a throwing getToolSchemas() or a
    // list whose iteration throws is rethrown with the manager unchanged; one bad schema is skipped.
    const schemas = provider.getToolSchemas();
    const rawSchemas: unknown[] = Array.isArray(schemas) ? Array.from(schemas as unknown[]) : [];
    const normalized: ToolSchema[] = [];
    for (const raw of rawSchemas) {
      const schema = this.readSchema(providerName, raw);
      if (schema) normalized.push(schema);
    }

    this.names.set(provider, providerName);
    this.insert(provider, isBuiltin, providerName);
    this.routeTools(provider, isBuiltin, providerName, normalized);
    this.logger.info(`Memory provider '${providerName}' registered (${rawSchemas.length} tools)`);
    return true;
  }

  private insert(provider: MemoryProvider, isBuiltin: boolean, providerName: string): void {
    if (isBuiltin) {
      // The built-in provider always comes first, even when registered after the external one.
      const firstExternal = this.list.findIndex((p) => this.nameOf(p) !== BUILTIN_PROVIDER_NAME);
      if (firstExternal < 0) this.list.push(provider);
      else this.list.splice(firstExternal, 0, provider);
    } else {
      this.externalName = providerName;
      this.capturedSpillConfig = normalizeSpillConfig(this.spillOptions);
      this.list.push(provider);
    }
  }

  private routeTools(provider: MemoryProvider, isBuiltin: boolean, providerName: string, schemas: ToolSchema[]): void {
    for (const schema of schemas) {
      const toolName = schema.name;
      if (!isBuiltin && RESERVED_CORE_TOOL_NAMES.has(toolName)) {
        this.logger.warn(
          `Memory provider '${providerName}' tool '${toolName}' shadows a reserved core tool name; registration ignored. Core tools always win — rename the provider's tool to something unique.`,
        );
        continue;
      }
      const owner = this.toolRoutes.get(toolName);
      if (owner) {
        this.logger.warn(
          `Memory tool name conflict: '${toolName}' already registered by ${this.nameOf(owner)}, ignoring from ${providerName}`,
        );
        continue;
      }
      this.toolRoutes.set(toolName, provider);
    }
  }

  /**
   * `normalizeToolSchema` that never throws (a schema's getters are provider code), and returns
   * plain JSON data: a schema that cannot be serialised (cyclic, BigInt) or whose getters throw is
   * skipped with a warning, because the host sends every advertised schema to the model API.
   */
  readSchema(providerName: string, raw: unknown, warnNameless = false): ToolSchema | null {
    let schema: ToolSchema | null;
    try {
      schema = normalizeToolSchema(raw);
    } catch (error) {
      this.logger.warn(
        `Memory provider '${providerName}' returned a tool schema that cannot be read (${describeError(error)}); skipping it`,
      );
      return null;
    }
    if (!schema) {
      if (warnNameless) this.logger.warn(`Memory provider '${providerName}' returned a tool schema without a name; skipping it`);
      return null;
    }
    try {
      return JSON.parse(JSON.stringify(schema)) as ToolSchema;
    } catch (error) {
      this.logger.warn(
        `Memory provider '${providerName}' tool '${schema.name}' schema is not JSON-serialisable (${describeError(error)}); skipping it`,
      );
      return null;
    }
  }

  /**
   * Unregister a non-built-in provider and its tool routes. Returns the provider removed, or
   * `null` when there is none by that name (the built-in provider is never removed).
   */
  remove(name: string): MemoryProvider | null {
    if (name === BUILTIN_PROVIDER_NAME) return null;
    const index = this.list.findIndex((p) => this.nameOf(p) === name);
    if (index < 0) return null;
    const [provider] = this.list.splice(index, 1);
    for (const [tool, owner] of [...this.toolRoutes]) if (owner === provider) this.toolRoutes.delete(tool);
    if (this.externalName === name) this.externalName = null;
    return provider!;
  }

  /** Whether the external provider's tools and system-prompt block are offered. */
  get externalEnabled(): boolean {
    return this.externalOn;
  }

  set externalEnabled(enabled: boolean) {
    this.externalOn = enabled;
  }

  /** The providers whose tools and prompt block are offered (all but a withheld external one). */
  offeredProviders(): MemoryProvider[] {
    return this.list.filter((p) => !this.isWithheld(p));
  }

  /** The provider a call of tool `name` reaches, unless the tool is unrouted or withheld. */
  routeFor(name: string): MemoryProvider | undefined {
    const provider = this.toolRoutes.get(name);
    return provider && !this.isWithheld(provider) ? provider : undefined;
  }

  /** True when tool `name` is routed to `provider` (offered or not). */
  isRoutedTo(name: string, provider: MemoryProvider): boolean {
    return this.toolRoutes.get(name) === provider;
  }

  /** Names of every routed tool that is offered. */
  toolNames(): Set<string> {
    return new Set([...this.toolRoutes.keys()].filter((name) => this.routeFor(name) !== undefined));
  }

  /** The spill settings captured when the external provider registered (or the options' now). */
  spillConfig(): SpillConfig {
    return this.capturedSpillConfig ?? normalizeSpillConfig(this.spillOptions);
  }

  private isWithheld(provider: MemoryProvider): boolean {
    return !this.externalOn && this.nameOf(provider) !== BUILTIN_PROVIDER_NAME;
  }
}
