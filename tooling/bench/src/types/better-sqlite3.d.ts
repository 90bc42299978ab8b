// The slice of better-sqlite3 the bench uses. Declared here instead of adding
// @types/better-sqlite3 as another dependency of a private tool package.
declare module "better-sqlite3" {
  namespace Database {
    interface RunResult {
      changes: number;
      lastInsertRowid: number | bigint;
    }
    interface Statement<Row = unknown> {
      run(...params: unknown[]): RunResult;
      get(...params: unknown[]): Row | undefined;
      all(...params: unknown[]): Row[];
    }
    interface Options {
      readonly?: boolean;
      fileMustExist?: boolean;
    }
    interface Database {
      prepare<Row = unknown>(sql: string): Statement<Row>;
      exec(sql: string): this;
      pragma(sql: string, options?: { simple?: boolean }): unknown;
      transaction<A extends unknown[]>(fn: (...args: A) => void): (...args: A) => void;
      close(): void;
    }
  }
  const Database: new (filename: string, options?: Database.Options) => Database.Database;
  export = Database;
}
