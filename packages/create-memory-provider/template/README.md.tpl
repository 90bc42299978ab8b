# {{packageName}}

{{description}}

A memory provider for [Hermes Memory](https://www.npmjs.com/package/@hermes/memory-core): provider name
`{{providerName}}`, three tools (`{{toolPrefix}}_notes_search`, `{{toolPrefix}}_notes_remember`,
`{{toolPrefix}}_notes_forget`), notes stored in `$HERMES_HOME/{{providerName}}/notes.jsonl`.

## Install and activate

```bash
npm install {{packageName}} @hermes/memory-core
npx hermes-memory memory setup {{providerName}} --yes   # with @hermes/memory-cli installed
```

or set `memory.provider: {{providerName}}` in `$HERMES_HOME/config.yaml`.

Settings are declared once in `CONFIG_FIELDS` (`src/index.ts`): setup asks them and
`loadProviderConfig()` from `@hermes/memory-core` resolves the same list into a typed config at
`initialize` (options, then `memory.{{providerName}}` in config.yaml, then the environment, then the
defaults; a bad value throws `INVALID_CONFIG`).

| key | default | meaning |
| --- | --- | --- |
| `prefetch_limit` | `5` | notes recalled before each turn (1–50) |
| `prefetch_max_chars` | `2000` | character budget of the recalled block (50–1,000,000) |
| `api_key` | — | optional secret, stored in `.env` under `API_KEY_ENV` (the provider name upper-cased + `_API_KEY`) |

Setup stores the optional `api_key` in `$HERMES_HOME/.env` (mode 0600), never in config.yaml; it is
read from the profile's `.env` first, then the environment.
`hermes-memory memory status` shows the provider's `getStatusConfig()` lines.

`prefetch_limit` and `prefetch_max_chars` are the kit's `PREFETCH_CONFIG_FIELDS`, the recall
settings every Hermes provider names alike.

The tools' schemas come from the kit's `memoryToolSchemas` (the builder the reference providers and
the MCP server use): search takes `query`, `limit` (default and maximum in `MEMORY_TOOL_LIMITS`:
10 and 50), one `kind` and `sessionId`; remember takes `content` and `tags`; forget takes an `id`.
Add `list` or `get` to its `actions`, or `capabilities: { filters: true }` once your search honours
every `MemoryFilter` key, and write the handler for what you add. Tool-argument validation and
routing (`ToolRouter`), the user boundary of the tools (`ToolUserScope`), recall formatting
(`formatRecall`), the item of a turn (`turnItem`) and the search tokenizer (`queryTokens`) come
from `@hermes/memory-provider-kit`, the toolkit the reference providers use; it also has item and
filter parsing, a session-keyed prefetch cache, the other hooks' items (`checkpointItems`,
`mirroredWrite`, `switchSessionAfterFlush`) and JSON Lines export/import. A provider that stores
in SQLite finds the reference providers' search engine (FTS5 queries, store opening, BM25 ranking)
in `@hermes/memory-provider-kit/sqlite`.

Several users: notes carry the session's `userId` (from `initialize`). In a session opened for a
user, the tools and recall reach only that user's notes, and a tool that takes an id looks it up
together with the user (`ToolUserScope.item(id)`, as the forget tool does), answering another
user's id exactly like an unknown one. The contract kit checks it (`C-ISOLATION-4`: another user's session drives
every tool at your notes).

## Develop

```bash
npm install
npm run build
npm test          # your tests + the Hermes contract kit
```

## Publish

```bash
npm publish --access public
```
