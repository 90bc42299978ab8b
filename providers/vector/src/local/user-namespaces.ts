/**
 * The sidecar layouts' namespaces as per-user boundaries (see namespace-encoding.ts for how a user
 * is named in one), and what becomes of memory an earlier version stored when user ids whose
 * characters a namespace does not keep (`a b`, `alice+work@x.com`) shared one with a look-alike
 * (`a_b`, `alice_work@x.com`).
 *
 * The first writable start of a sidecar moves every item of such a user, in one transaction, to
 * the user's own namespace (row keys, vectors and keyword index stay; the turns' context is
 * refilled per namespace). An item stored without a user goes with its namespace's users when they
 * all moved to one namespace; where the namespace held several users it stays (it belongs to the
 * namespace's remaining owner) and a warning names how many stayed where. With the Pinecone store
 * the moved items' vectors follow in the background (fetched from the old namespace, written to the
 * new one, then deleted from the old), listed in the sidecar until done, so an interruption resumes
 * at the next start; until then they are hidden in the old namespace. Writes queued in the outbox
 * move with them. A sidecar that is read-only until then is not trusted to hold one user per
 * namespace: its searches and erasures check each item's `user_id`.
 */
import { describeError, type Logger } from "@hermes/memory-core";
import { isBusyError } from "@hermes/memory-provider-kit/sqlite";
import type { Outbox, OutboxEntry } from "../pinecone/outbox.js";
import type { Sidecar } from "./sidecar.js";
import type { SqlCondition } from "./sidecar-rows.js";
import { fillContext } from "./sidecar-schema.js";
import { assembleNamespace, profileNamespacePart, userNamespacePart, userOfNamespacePart } from "./namespace-encoding.js";
import type { VectorStore } from "../backends/vector-store.js";

/** Sidecar meta key set once every namespace of the sidecar names its user as namespace-encoding.ts does. */
const CURRENT_KEY = "namespace_users";
/** Sidecar meta key: `{old: new}` for namespaces whose items without a user moved (queued writes follow them). */
const UNOWNED_MOVES_KEY = "namespace_users_unowned_moves";
const MOVES_TABLE = "vector_namespace_moves";
/** Vectors moved per Pinecone request. */
const MOVE_BATCH = 100;

/** SQL: the text `user_id` of `records` row `alias`, else NULL. */
const userOf = (alias: string): string =>
  `(CASE WHEN json_valid(${alias}.metadata) AND json_type(${alias}.metadata, '$.user_id') = 'text' THEN json_extract(${alias}.metadata, '$.user_id') END)`;

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * The namespace an item of `user` that an earlier version stored in `namespace` belongs in now, or
 * null when it stays. The profile part is what `namespace` holds where the template puts `{profile}`.
 */
export function relocatedNamespace(template: string, namespace: string, user: string): string | null {
  let profileSeen = false;
  const pattern = template
    .split(/(\{profile\}|\{user\})/)
    .map((part) => {
      if (part === "{user}") return escapeRegExp(profileNamespacePart(user));
      if (part !== "{profile}") return escapeRegExp(part);
      if (profileSeen) return "\\1";
      profileSeen = true;
      return "(.*)";
    })
    .join("");
  const match = new RegExp(`^${pattern}$`, "s").exec(namespace);
  if (!match) return null;
  const now = assembleNamespace(template, match[1] ?? "", userNamespacePart(user));
  return now === namespace ? null : now;
}

/** What the migration did, for the log. */
interface Migrated {
  moved: number;
  /** Namespaces that held several users, with their items stored without a user (they stay). */
  unowned: Array<{ namespace: string; items: number }>;
}

/** One namespace's items by user, as an earlier version left them. */
interface Plan {
  moves: Array<{ user: string; to: string }>;
  /** Where the items with a user go (null: they stay). */
  targets: Set<string | null>;
  unowned: number;
}

/** The migration, inside one write transaction of the sidecar (see the module comment). */
function migrate(sidecar: Sidecar, template: string, moveVectors: boolean): Migrated {
  const db = sidecar.db;
  const plans = new Map<string, Plan>();
  const pairs = db.prepare(`SELECT namespace, ${userOf("r")} AS user, COUNT(*) AS n FROM records r GROUP BY 1, 2`).all() as Array<{
    namespace: string;
    user: string | null;
    n: number;
  }>;
  for (const { namespace, user, n } of pairs) {
    const plan = plans.get(namespace) ?? { moves: [], targets: new Set(), unowned: 0 };
    plans.set(namespace, plan);
    if (user === null) {
      plan.unowned += n;
      continue;
    }
    const to = relocatedNamespace(template, namespace, user);
    plan.targets.add(to);
    if (to !== null) plan.moves.push({ user, to });
  }
  if (moveVectors)
    db.exec(
      `CREATE TABLE IF NOT EXISTS ${MOVES_TABLE} (id TEXT NOT NULL, from_ns TEXT NOT NULL, to_ns TEXT NOT NULL, PRIMARY KEY (from_ns, id))`,
    );
  const listMoves = !moveVectors
    ? null
    : db.prepare(
        `INSERT OR REPLACE INTO ${MOVES_TABLE} (id, from_ns, to_ns) SELECT r.id, r.namespace, ? FROM records r WHERE r.namespace = ? AND ${userOf("r")} IS ?`,
      );
  const move = db.prepare(`UPDATE records SET namespace = ? WHERE namespace = ? AND ${userOf("records")} IS ?`);
  const out: Migrated = { moved: 0, unowned: [] };
  const unownedMoves: Record<string, string> = JSON.parse(sidecar.getMeta(UNOWNED_MOVES_KEY) ?? "{}") as Record<string, string>;
  const moveRows = (namespace: string, user: string | null, to: string): void => {
    listMoves?.run(to, namespace, user);
    out.moved += move.run(to, namespace, user).changes;
  };
  for (const [namespace, plan] of plans) {
    for (const { user, to } of plan.moves) moveRows(namespace, user, to);
    if (plan.unowned === 0 || plan.moves.length === 0) continue;
    const [only] = plan.targets;
    if (plan.targets.size === 1 && only) {
      moveRows(namespace, null, only);
      unownedMoves[namespace] = only;
    } else out.unowned.push({ namespace, items: plan.unowned });
  }
  // A turn's context is the previous turns of its namespace and session: refilled where turns left or arrived.
  if (out.moved > 0) fillContext(db);
  if (Object.keys(unownedMoves).length > 0) sidecar.setMeta(UNOWNED_MOVES_KEY, JSON.stringify(unownedMoves));
  sidecar.setMeta(CURRENT_KEY, "1");
  return out;
}

/** A sidecar's namespaces as user boundaries: see the module comment. */
export class UserNamespaces {
  /** Items whose vectors still wait to move between Pinecone namespaces. */
  private pendingMoves: number;
  private moving: Promise<void> | null = null;

  private constructor(
    private readonly sidecar: Sidecar,
    private readonly template: string,
    /** Every namespace holds one user's items: a search in a user's namespace needs no user check. */
    readonly current: boolean,
    private readonly logger: Logger,
  ) {
    this.pendingMoves = this.tableExists() ? (sidecar.db.prepare(`SELECT COUNT(*) FROM ${MOVES_TABLE}`).pluck().get() as number) : 0;
  }

  /**
   * Check (and on a writable sidecar, unless `inspect`, migrate) `sidecar`'s namespaces for
   * `template`. `pinecone`: the vectors live in Pinecone and move in the background
   * (`moveVectors`). Never throws for another process's lock: the migration is then left for a
   * later start.
   */
  static open(sidecar: Sidecar, template: string, options: { pinecone: boolean; logger: Logger; inspect?: boolean }): UserNamespaces {
    const { logger } = options;
    // A read-only sidecar with nothing in it has nothing to move (a writable one is marked by the migration).
    const empty = () => sidecar.db.prepare(`SELECT NOT EXISTS (SELECT 1 FROM records)`).pluck().get() === 1;
    let current = !template.includes("{user}") || sidecar.getMeta(CURRENT_KEY) !== undefined || (sidecar.readOnly && empty());
    if (!current && options.inspect === true) {
      // Inspection changes nothing: the next start migrates.
    } else if (!current && !sidecar.readOnly) {
      try {
        const migrated = sidecar.db
          .transaction(() => (sidecar.getMeta(CURRENT_KEY) === undefined ? migrate(sidecar, template, options.pinecone) : null))
          .immediate();
        current = true;
        if (migrated && migrated.moved > 0) {
          logger.warn(
            `vector memory: moved ${migrated.moved} items of users whose ids hold characters other than letters, digits and . _ : @ - to namespaces of their own (they shared a namespace with look-alike ids before).`,
          );
        }
        for (const { namespace, items } of migrated?.unowned ?? []) {
          logger.warn(
            `vector memory: ${items === 1 ? "1 item" : `${items} items`} stored without a user in namespace ${namespace}, which several users shared before, ${items === 1 ? "stays" : "stay"} there (with the items of the user it now stands for). ` +
              "Review them with `hermes-memory vector export`; erase one with `hermes-memory vector forget <id>`.",
          );
        }
      } catch (error) {
        if (!isBusyError(error)) throw error;
        logger.warn(
          `vector memory: another process holds the sidecar's write lock, so its namespaces are moved to per-user names at a later start (${describeError(error)}); until then searches check each item's user.`,
        );
      }
    } else if (!current) {
      logger.warn(
        `vector memory: ${sidecar.file} is read-only and was written before each user id got a namespace of its own, so it is read with a check of each item's user: items stored without a user are not recalled, and users whose ids hold characters other than letters, digits and . _ : @ - find what they stored earlier once the sidecar has been opened with write access.`,
      );
    }
    return new UserNamespaces(sidecar, template, current, logger);
  }

  private tableExists(): boolean {
    return this.sidecar.db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(MOVES_TABLE) !== undefined;
  }

  /**
   * The condition (over `records r`) keeping what a user's namespace may show them: `condition` and,
   * when `owner` is given, no item carrying another user's `user_id`.
   */
  static ownedBy(condition: SqlCondition | null, owner: string | undefined): SqlCondition | null {
    if (owner === undefined) return condition;
    const own = { sql: `${userOf("r")} IS NULL OR ${userOf("r")} = ?`, params: [owner] };
    return condition ? { sql: `(${condition.sql}) AND (${own.sql})`, params: [...condition.params, ...own.params] } : own;
  }

  /** Whether an item's stored `user_id` names someone other than `owner` (items without one belong to their namespace). */
  static foreign(userId: unknown, owner: string): boolean {
    return typeof userId === "string" && userId !== owner;
  }

  /**
   * Queued writes (and writes set aside) an earlier version put in an old namespace go where their
   * items went: by their `user_id`, or for those without one, with their namespace's items.
   */
  relocateQueued(outbox: Outbox): void {
    if (!this.template.includes("{user}") || !this.current) return;
    const unowned = JSON.parse(this.sidecar.getMeta(UNOWNED_MOVES_KEY) ?? "{}") as Record<string, string>;
    const moved = outbox.relocate((entry: OutboxEntry) => {
      const user = entry.metadata.user_id;
      return typeof user === "string" ? relocatedNamespace(this.template, entry.namespace, user) : (unowned[entry.namespace] ?? null);
    });
    if (moved > 0) this.logger.info(`vector memory: ${moved} queued writes follow their items to their users' namespaces.`);
  }

  /** Of `ids` in `namespace`, those whose Pinecone records wait to move elsewhere (they are not this namespace's). */
  hidden(namespace: string, ids: readonly string[]): Set<string> {
    if (this.pendingMoves === 0 || ids.length === 0) return new Set();
    const sql = `SELECT m.id FROM ${MOVES_TABLE} m WHERE m.from_ns = ? AND m.id IN (SELECT value FROM json_each(?))
      AND NOT EXISTS (SELECT 1 FROM records r WHERE r.namespace = m.from_ns AND r.id = m.id)`;
    return new Set(this.sidecar.db.prepare(sql).pluck().all(namespace, JSON.stringify(ids)) as string[]);
  }

  /** Resolves when no vector move is running (a failed one was logged). */
  async settled(): Promise<void> {
    await this.moving;
  }

  /**
   * Move the listed items' vectors in `store` (Pinecone) to their new namespaces, in the
   * background: fetched from the old namespace, written to the new one with the item's metadata,
   * deleted from the old one (unless an item of that id lives there again), then crossed off.
   * A failure is logged once; what is left is moved at the next start.
   */
  moveVectors(store: VectorStore, stillOpen: () => boolean): void {
    if (this.pendingMoves === 0 || this.moving || this.sidecar.readOnly) return;
    this.moving = this.moveAll(store, stillOpen)
      .catch((error: unknown) => {
        this.logger.warn(
          `vector memory: moving ${this.pendingMoves} items' vectors to their users' namespaces failed (${describeError(error)}); they are moved at the next start, and hidden from the old namespace until then.`,
        );
      })
      .finally(() => {
        this.moving = null;
      });
  }

  private async moveAll(store: VectorStore, stillOpen: () => boolean): Promise<void> {
    const db = this.sidecar.db;
    const next = db.prepare(`SELECT id, from_ns AS "from", to_ns AS "to" FROM ${MOVES_TABLE} ORDER BY from_ns, to_ns LIMIT ${MOVE_BATCH}`);
    const done = db.prepare(`DELETE FROM ${MOVES_TABLE} WHERE from_ns = ? AND id = ?`);
    for (
      let batch = next.all() as Array<{ id: string; from: string; to: string }>;
      batch.length > 0 && stillOpen();
      batch = next.all() as typeof batch
    ) {
      const { from, to } = batch[0]!;
      const ids = batch.filter((m) => m.from === from && m.to === to).map((m) => m.id);
      const vectors = await store.fetch(ids, { namespace: from });
      const rows = new Map(this.sidecar.getByIds(to, ids).map((r) => [r.id, r]));
      const records = ids.flatMap((id) => {
        const row = rows.get(id);
        const vector = vectors.get(id)?.vector;
        return row && vector ? [{ id, vector, metadata: { ...row.metadata, text: row.text } }] : [];
      });
      if (records.length > 0) await store.upsert(records, { namespace: to });
      const livesThere = new Set(this.sidecar.getByIds(from, ids).map((r) => r.id));
      const stale = ids.filter((id) => !livesThere.has(id));
      if (stale.length > 0) await store.delete({ ids: stale }, { namespace: from });
      db.transaction(() => {
        for (const id of ids) done.run(from, id);
      })();
      this.pendingMoves = Math.max(0, this.pendingMoves - ids.length);
    }
  }
}

/**
 * The user a sidecar namespace stands for (per `template` and `profile`), read back from its name;
 * a shortened name is matched against the users its items carry. Null when it names none.
 */
export function namespaceUserReader(sidecar: Sidecar, template: string, profile: string): (namespace: string) => string | null {
  if (!template.includes("{user}")) return () => null;
  const parts = template.split("{user}").map((part) => escapeRegExp(assembleNamespace(part, profileNamespacePart(profile), "")));
  const pattern = new RegExp(`^${parts.join("(.+?)")}$`, "s");
  const usersIn = sidecar.db
    .prepare(`SELECT DISTINCT ${userOf("r")} FROM records r WHERE r.namespace = ? AND ${userOf("r")} IS NOT NULL`)
    .pluck();
  const known = new Map<string, string | null>();
  return (namespace) => {
    if (known.has(namespace)) return known.get(namespace)!;
    const part = pattern.exec(namespace)?.[1];
    let user = part === undefined ? null : userOfNamespacePart(part);
    if (part !== undefined && user === null) user = (usersIn.all(namespace) as string[]).find((u) => userNamespacePart(u) === part) ?? null;
    known.set(namespace, user);
    return user;
  };
}
