// Child process for the crash test: writes batches into a LocalVectorStore forever, printing the
// number of committed records after each batch, until the parent kills it with SIGKILL.
import { LocalVectorStore } from "../local/local-vector-store.js";

const directory = process.argv[2]!;
const dims = 16;
const store = await LocalVectorStore.open({ directory, dimensions: dims, exactThreshold: 0, saveDelayMs: 1 });
let n = 0;
for (;;) {
  const records = Array.from({ length: 20 }, () => {
    const v = new Float32Array(dims).map(() => Math.random() - 0.5);
    const id = `r${n++}`;
    return { id, vector: v, metadata: { text: `record ${id}` } };
  });
  store.upsertSync(records);
  process.stdout.write(`${n}\n`);
  // Yield so the debounced index save runs between batches: the kill can land mid-save.
  await new Promise((resolve) => setImmediate(resolve));
}
