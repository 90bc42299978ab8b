// Child process holding the write lock of the SQLite file argv[2], as another agent or an import in
// the middle of a write transaction does: BEGIN IMMEDIATE, "locked" to the parent, then release
// after argv[3] ms (or when the parent sends "release", or goes away) and exit.
import Database from "better-sqlite3";

const [file, holdMs] = process.argv.slice(2) as [string, string];
const db = new Database(file);
db.exec("BEGIN IMMEDIATE");
const release = (): void => {
  db.exec("ROLLBACK");
  db.close();
  if (process.connected) process.send?.({ type: "released" }, () => process.exit(0));
  else process.exit(0);
};
const timer = setTimeout(release, Number(holdMs));
process.on("disconnect", () => {
  clearTimeout(timer);
  if (db.open) release();
});
process.on("message", (m) => {
  if (m === "release" && db.open) {
    clearTimeout(timer);
    release();
  }
});
process.send?.({ type: "locked" });
