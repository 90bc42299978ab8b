/** The connection type the layered ranker takes (the kit's `SqliteDb`). */
export type { SqliteDb as Db } from "./sqlite-store.js";
