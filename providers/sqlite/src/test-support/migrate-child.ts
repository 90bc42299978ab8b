// Child process for the migration crash test: opens (and so migrates) the database given as argv[2]
// and reports each migration step to the parent, which kills it part-way.
import { openDatabase } from "../database.js";

const file = process.argv[2]!;
const db = openDatabase(file, {
  onMigrationProgress: (done, total) => {
    process.send?.({ type: "progress", done, total });
    // Give the parent time to kill this process between steps.
    const until = Date.now() + 50;
    while (Date.now() < until) {
      // busy wait: the migration is synchronous, so an await would not yield here
    }
  },
});
db.close();
process.send?.({ type: "done" });
