/**
 * One worker thread hosting one provider: starts it, sends calls, settles them from the worker's
 * answers, and when the thread dies or is terminated rejects every call still in flight.
 */
import { Worker } from "node:worker_threads";
import { HermesMemoryError, describeError } from "../errors.js";
import type { Logger } from "../logger.js";
import type { ProviderSkill } from "../skills.js";
import { deserializeError, type CallMessage, type ProviderSnapshot, type WorkerMessage, type WorkerStart } from "./protocol.js";

/** The worker's entry module, compiled beside this one. */
const WORKER_ENTRY = new URL("./worker-entry.js", import.meta.url);

/** Options that only describe the main script (`-e`, `--input-type`) are not the worker's; the rest (memory limits, `--import`) are inherited. */
export function workerExecArgv(execArgv: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const arg = execArgv[i]!;
    if (arg === "-e" || arg === "--eval" || arg === "-p" || arg === "--print") i++;
    else if (!/^(--input-type|--eval|--print)=/.test(arg)) kept.push(arg);
  }
  return kept;
}

interface Pending {
  method: string;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** What the worker reported once the provider was loaded. */
export interface WorkerReady {
  methods: string[];
  snapshot: ProviderSnapshot;
  skills: ProviderSkill[];
  /** What the module's `register(ctx)` registered besides the provider (e.g. `hook on_session_end`); it stays in the worker. */
  registrations: string[];
}

/** Called once when the thread ends for any reason other than `terminate()`. */
export type DeathListener = (reason: string) => void;

export class WorkerConnection {
  readonly ready: Promise<WorkerReady>;
  /** The latest snapshot of the provider's synchronous members. */
  snapshot: ProviderSnapshot | null = null;
  /** Why the thread is gone, once it is. */
  deadReason: string | null = null;
  private readonly worker: Worker;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private onDeath: DeathListener = () => {};

  constructor(
    private readonly start: WorkerStart,
    private readonly logger: Logger,
  ) {
    this.worker = new Worker(WORKER_ENTRY, { workerData: start, execArgv: workerExecArgv(process.execArgv), stdout: false, stderr: false });
    this.worker.unref();
    this.ready = new Promise<WorkerReady>((resolve, reject) => {
      this.worker.on("message", (message: WorkerMessage) => {
        if (message.type === "ready") {
          this.snapshot = message.snapshot;
          resolve({ methods: message.methods, snapshot: message.snapshot, skills: message.skills, registrations: message.registrations });
        } else if (message.type === "load-failed") reject(deserializeError(message.error, start.name));
        else this.receive(message);
      });
      this.worker.on("error", (error: unknown) => this.die(`its worker thread threw ${describeError(error)}`, reject));
      this.worker.on("exit", (code: number) => this.die(`its worker thread exited with code ${code}`, reject));
    });
    // A load failure is reported by whoever awaits `ready`; never an unhandled rejection.
    this.ready.catch(() => {});
  }

  /** Listen for the thread's death (a crash, `process.exit`, running out of memory). */
  setDeathListener(listener: DeathListener): void {
    this.onDeath = listener;
  }

  /** Send one call; settles with the provider's value or its error (typed). */
  call(method: string, args: unknown[]): Promise<unknown> {
    if (this.deadReason !== null) return Promise.reject(this.gone(method, this.deadReason));
    const id = this.nextId++;
    const message: CallMessage = { type: "call", id, method, args };
    return new Promise((resolve, reject) => {
      try {
        this.worker.postMessage(message);
      } catch (error) {
        reject(
          new HermesMemoryError({
            code: "INVALID_ARGUMENT",
            message: `The arguments of ${method}() for memory provider '${this.start.name}' cannot be sent to its worker thread (${describeError(error)}); pass plain data (no functions, class instances or symbols).`,
          }),
        );
        return;
      }
      if (this.pending.size === 0) this.worker.ref();
      this.pending.set(id, { method, resolve, reject });
    });
  }

  /** End the thread now; calls in flight reject with `PROVIDER_CRASHED` naming `reason`. */
  async terminate(reason: string): Promise<void> {
    if (this.deadReason === null) {
      this.deadReason = reason;
      this.rejectAll(reason);
    }
    await this.worker.terminate();
  }

  private receive(message: Exclude<WorkerMessage, { type: "ready" | "load-failed" }>): void {
    if (message.type === "log") {
      this.logger[message.level](message.message);
      return;
    }
    if (message.snapshot) this.snapshot = message.snapshot;
    const call = this.pending.get(message.id);
    if (!call) return;
    this.pending.delete(message.id);
    if (this.pending.size === 0) this.worker.unref();
    if (message.outcome.ok) call.resolve(message.outcome.value);
    else call.reject(deserializeError(message.outcome.error, this.start.name));
  }

  private die(reason: string, rejectReady: (error: unknown) => void): void {
    if (this.deadReason !== null) return;
    this.deadReason = reason;
    rejectReady(
      new HermesMemoryError({ code: "PROVIDER_LOAD_FAILED", message: `Memory provider '${this.start.name}' could not start: ${reason}.` }),
    );
    this.onDeath(reason);
    this.rejectAll(reason);
  }

  private rejectAll(reason: string): void {
    const calls = [...this.pending.values()];
    this.pending.clear();
    this.worker.unref();
    for (const call of calls) call.reject(this.gone(call.method, reason));
  }

  private gone(method: string, reason: string): HermesMemoryError {
    return new HermesMemoryError({
      code: "PROVIDER_CRASHED",
      message: `Memory provider '${this.start.name}' ${method}() did not complete: ${reason}. The worker is replaced on the next call; if this repeats, check the provider's logs or run it inline (memory.isolation).`,
    });
  }
}
