/**
 * When the local store's index file is saved: a dirty index is saved `delayMs` after the write
 * that dirtied it, by `flush()` and on close, and never while writes in steps run (`holding`).
 * Saves made while the host runs keep only the index's serialisation on the event loop
 * (`saveIndexFileInSteps`); one runs at a time, and a save started later wins over an earlier one
 * still finishing.
 */
import { describeError, type Logger } from "@hermes/memory-core";
import type { Usearch } from "../native-modules.js";
import { saveIndexFile, saveIndexFileInSteps } from "./index-file.js";
import type { Sidecar } from "./sidecar.js";

type SavedIndex = Pick<InstanceType<Usearch["Index"]>, "save">;

/** What the schedule needs of its store. */
export interface IndexSavesHost {
  readonly indexPath: string | null;
  readonly sidecar: Sidecar;
  readonly logger: Logger;
  /** Delay before a dirty index is saved (ms). */
  readonly delayMs: number;
  /** False once the store is closed, or when it is read-only: nothing is saved. */
  canSave(): boolean;
  /** The index to save now (the store may swap an emptied index for a fresh one first). */
  indexToSave(): SavedIndex;
  /** The tombstones of the index `indexToSave` returned, recorded with the file. */
  freedSlots(): number;
}

export class IndexSaves {
  /** The index changed since the file was last saved. */
  dirty = false;
  private timer: NodeJS.Timeout | null = null;
  private saving: Promise<void> | null = null;
  private started = 0;
  private holds = 0;

  constructor(private readonly host: IndexSavesHost) {}

  /** The index changed: save it `delayMs` from now (unless a save is already due or writes in steps run). */
  markDirty(): void {
    this.dirty = true;
    if (!this.host.indexPath || this.timer || this.holds > 0 || !this.host.canSave()) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.saveInSteps().catch((error: unknown) => {
        // Still dirty: flush() and close() retry and surface it; the sidecar holds every vector.
        this.host.logger.warn(`vector memory: ${describeError(error)}`);
      });
    }, this.host.delayMs);
    this.timer.unref();
  }

  /** Save at once, all of it on this thread (open and rebuild, before the host runs). */
  saveNow(): void {
    if (!this.host.indexPath || !this.dirty || !this.host.canSave()) return;
    const index = this.host.indexToSave();
    this.started++;
    saveIndexFile(index, this.host.indexPath, this.host.sidecar, this.host.freedSlots());
    this.dirty = false;
  }

  /** Save now when dirty (`flush()`): waits for a save still running, then saves what changed since. */
  async flush(): Promise<void> {
    this.cancelTimer();
    await this.saveInSteps();
  }

  /**
   * Run `work` (writes in steps) with the timed saves held: the index file records one
   * generation and is rebuilt on open when any write followed it, so a file saved between two
   * steps is stale at the next one and only holds up the host (serialising a 100,000-vector index
   * takes a fifth of a second). The save follows `delayMs` after the last of these ends.
   */
  async holding<T>(work: () => Promise<T>): Promise<T> {
    this.holds++;
    this.cancelTimer();
    try {
      return await work();
    } finally {
      this.holds--;
      if (this.holds === 0 && this.dirty) this.markDirty();
    }
  }

  cancelTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** One save off the event loop but for the serialisation; a write landing meanwhile marks the index dirty again. */
  private async saveInSteps(): Promise<void> {
    while (this.saving) await this.saving;
    const { indexPath } = this.host;
    if (!indexPath || !this.dirty || !this.host.canSave()) return;
    const index = this.host.indexToSave();
    const mine = ++this.started;
    this.dirty = false;
    const saving = saveIndexFileInSteps(index, indexPath, this.host.sidecar, () => this.started === mine, this.host.freedSlots()).then(
      () => undefined,
      (error: unknown) => {
        this.dirty = true;
        throw error;
      },
    );
    this.saving = saving.catch(() => undefined);
    try {
      await saving;
    } finally {
      this.saving = null;
    }
  }
}
