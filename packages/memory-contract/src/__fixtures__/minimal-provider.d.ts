import {
  MemoryProvider,
  type ChatMessage,
  type ConfigField,
  type InitContext,
  type MemoryHit,
  type MemoryItem,
  type MemorySearchOptions,
  type MemoryStats,
  type SearchableMemory,
  type ToolSchema,
} from "@hermes/memory-core";

export interface StoredItem extends Omit<MemoryHit, "score"> {
  userId?: string;
}

export declare class MinimalProvider extends MemoryProvider implements SearchableMemory {
  name: string;
  preCompressCheckpointApiVersion: 1 | 2;
  items: StoredItem[];
  file: string;
  writes: boolean;
  userId: string | undefined;
  closed: boolean;
  pending: Promise<void>;
  lastError: unknown;
  isAvailable(): boolean;
  initialize(sessionId: string, ctx: InitContext): void;
  load(): StoredItem[];
  getToolSchemas(): ToolSchema[];
  handleToolCall(toolName: string, args: Record<string, unknown>): string;
  getConfigSchema(): ConfigField[];
  saveConfig(values: Record<string, unknown>, hermesHome: string): Promise<void>;
  scheduleWrite(): void;
  persist(): Promise<void>;
  addItem(item: MemoryItem & { id?: string }): string;
  /** Throws INVALID_ARGUMENT for an item that could not be stored. */
  checkItem(item: unknown): void;
  remember(item: MemoryItem): string;
  search(query: string, options?: MemorySearchOptions): MemoryHit[];
  get(id: string): MemoryHit | null;
  forget(id: string): boolean;
  stats(): MemoryStats;
  flush(): Promise<void>;
  prefetch(query: string): string;
  syncTurn(userContent: string, assistantContent: string, options: { sessionId: string; turnAuthor?: { name?: string } }): void;
  onSessionSwitch(): Promise<boolean>;
  checkpointText(message: ChatMessage): string;
  onSessionEnd(): Promise<void>;
  onMemoryWrite(action: string, target: string, content: string): void;
  checkpointKey(message: ChatMessage): string;
  onPreCompress(messages: ChatMessage[]): Promise<string>;
  shutdown(): Promise<void>;
}

export declare function register(ctx: { registerMemoryProvider(provider: MemoryProvider): void }): void;
