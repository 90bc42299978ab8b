import { describe, expect, it } from "vitest";
import { checkpointRequiredWarning, normalizeCheckpointEvidence, preCompress } from "./checkpoint.js";
import { CheckpointUnavailableError } from "./errors.js";
import { MemoryManager } from "./manager.js";
import type { ChatMessage } from "./provider.js";
import { RecordingProvider, capturingLogger } from "./test-support/recording-provider.js";

const RAW: ChatMessage[] = [
  { role: "system", content: "You are Hermes." },
  { role: "user", content: "Please remember I deploy on Fridays." },
  { role: "assistant", content: "", tool_calls: [{ id: "c1", type: "function" }] },
  { role: "tool", tool_call_id: "c1", content: "tool output" },
  { role: "assistant", content: "Checking the calendar.", tool_calls: [{ id: "c2", type: "function" }] },
  { role: "assistant", content: "Noted: Fridays." },
  { role: "user", content: "Summary of earlier turns", _compressed_summary: true },
];

function managerWith(...providers: RecordingProvider[]) {
  const logger = capturingLogger();
  const mgr = new MemoryManager({ logger, hermesHome: "/tmp/none" });
  for (const p of providers) mgr.addProvider(p);
  return { mgr, logger };
}

describe("normalizeCheckpointEvidence", () => {
  it("keeps only direct user/assistant prose and never mutates the input", () => {
    const before = structuredClone(RAW);
    const evidence = normalizeCheckpointEvidence([...RAW, "not a row" as unknown as ChatMessage, null as unknown as ChatMessage]);
    expect(evidence).toEqual([
      { role: "user", content: "Please remember I deploy on Fridays." },
      { role: "assistant", content: "Checking the calendar." },
      { role: "assistant", content: "Noted: Fridays." },
    ]);
    expect(RAW).toEqual(before);
    expect(RAW[4]?.tool_calls).toHaveLength(1);
  });

  it("drops tool-call wrappers whose content is whitespace or null", () => {
    expect(
      normalizeCheckpointEvidence([
        { role: "assistant", content: "   ", tool_calls: [{}] },
        { role: "assistant", content: null, tool_calls: [{}] },
      ]),
    ).toEqual([]);
  });

  it("returns [] for a non-array", () => {
    expect(normalizeCheckpointEvidence(undefined)).toEqual([]);
  });
});

describe("MemoryManager checkpoint contract", () => {
  it("v1 providers receive raw messages, v2 providers receive evidence", async () => {
    const v1 = new RecordingProvider("builtin");
    const v2 = new RecordingProvider("ext", {}, { checkpointVersion: 2 });
    const { mgr } = managerWith(v1, v2);
    const evidence = normalizeCheckpointEvidence(RAW);
    await mgr.onPreCompress(RAW, { evidenceMessages: evidence });
    expect(v1.argsOf("onPreCompress")).toEqual([[RAW, { requireCheckpoint: false }]]);
    expect(v2.argsOf("onPreCompress")).toEqual([[evidence, { requireCheckpoint: false }]]);
  });

  it("a v2 provider without evidence gets the raw messages", async () => {
    const v2 = new RecordingProvider("ext", {}, { checkpointVersion: 2 });
    const { mgr } = managerWith(v2);
    await mgr.onPreCompress(RAW);
    expect(v2.argsOf("onPreCompress")[0]?.[0]).toEqual(RAW);
  });

  it("advertises the capability only with a v2 provider", () => {
    expect(managerWith(new RecordingProvider("builtin"), new RecordingProvider("ext")).mgr.supportsPreCompressCheckpoint()).toBe(false);
    expect(managerWith(new RecordingProvider("ext", {}, { checkpointVersion: 2 })).mgr.supportsPreCompressCheckpoint()).toBe(true);
    expect(managerWith().mgr.supportsPreCompressCheckpoint()).toBe(false);
  });

  it("treats an unparseable version as not capable", () => {
    const odd = new RecordingProvider("ext");
    Object.defineProperty(odd, "preCompressCheckpointApiVersion", { value: "two" });
    expect(managerWith(odd).mgr.supportsPreCompressCheckpoint()).toBe(false);
    const numeric = new RecordingProvider("ext");
    Object.defineProperty(numeric, "preCompressCheckpointApiVersion", { value: "2" });
    expect(managerWith(numeric).mgr.supportsPreCompressCheckpoint()).toBe(true);
  });

  it("requireCheckpoint without a capable provider throws a pre-compress checkpoint error", async () => {
    const { mgr } = managerWith(new RecordingProvider("builtin"), new RecordingProvider("ext"));
    await expect(mgr.onPreCompress(RAW, { requireCheckpoint: true })).rejects.toThrow(/pre-compress checkpoint/);
    await expect(mgr.onPreCompress(RAW, { requireCheckpoint: true })).rejects.toSatisfy((e) => CheckpointUnavailableError.isInstance(e));
  });

  it("forwards requireCheckpoint=true to v2 only; v1 always sees false", async () => {
    const v1 = new RecordingProvider("builtin");
    const v2 = new RecordingProvider("ext", { onPreCompress: () => "checkpoint ok" }, { checkpointVersion: 2 });
    const { mgr } = managerWith(v1, v2);
    expect(await mgr.onPreCompress(RAW, { evidenceMessages: [], requireCheckpoint: true })).toBe("checkpoint ok");
    expect(v1.argsOf("onPreCompress")[0]?.[1]).toEqual({ requireCheckpoint: false });
    expect(v2.argsOf("onPreCompress")[0]?.[1]).toEqual({ requireCheckpoint: true });
  });

  it('a failing v2 provider propagates under require, and is swallowed ("") in best-effort mode', async () => {
    const v2 = new RecordingProvider(
      "ext",
      {
        onPreCompress: () => {
          throw new Error("durable store unreachable");
        },
      },
      { checkpointVersion: 2 },
    );
    const { mgr } = managerWith(v2);
    await expect(mgr.onPreCompress(RAW, { requireCheckpoint: true })).rejects.toThrow("durable store unreachable");
    expect(await mgr.onPreCompress(RAW, { requireCheckpoint: false })).toBe("");
    expect(v2.argsOf("onPreCompress")[1]?.[1]).toEqual({ requireCheckpoint: false });
  });

  it("best-effort mode swallows a failing v1 provider", async () => {
    const v1 = new RecordingProvider("ext", {
      onPreCompress: () => {
        throw new Error("legacy failure");
      },
    });
    const { mgr } = managerWith(v1);
    expect(await mgr.onPreCompress(RAW)).toBe("");
  });
});

describe("preCompress (host helper)", () => {
  it("passes normalised evidence and the required flag, and sanitises the result", async () => {
    const v2 = new RecordingProvider(
      "ext",
      { onPreCompress: () => "<memory-context>Fridays are deploy days</memory-context> keep" },
      { checkpointVersion: 2 },
    );
    const { mgr } = managerWith(new RecordingProvider("builtin"), v2);
    expect(await preCompress(mgr, RAW, { checkpointRequired: true })).toBe(" keep");
    expect(v2.argsOf("onPreCompress")[0]).toEqual([normalizeCheckpointEvidence(RAW), { requireCheckpoint: true }]);
  });

  it("throws BLOCKED_MISSING_PREREQUISITE with remediation when no manager or no capable provider", async () => {
    for (const target of [null, managerWith(new RecordingProvider("ext")).mgr]) {
      let caught: unknown;
      try {
        await preCompress(target, RAW, { checkpointRequired: true });
      } catch (error) {
        caught = error;
      }
      expect(CheckpointUnavailableError.isInstance(caught)).toBe(true);
      const message = (caught as Error).message;
      expect(message.startsWith("BLOCKED_MISSING_PREREQUISITE:")).toBe(true);
      expect(message).toContain("compression.checkpoint_required");
      expect(message).toContain("false");
    }
  });

  it("a probe failure and a checkpoint failure are blocked without remediation; the failure is logged", async () => {
    const probeFails = {
      providers: [],
      supportsPreCompressCheckpoint: () => {
        throw new Error("probe");
      },
      onPreCompress: async () => "",
    };
    await expect(preCompress(probeFails, RAW, { checkpointRequired: true })).rejects.toThrow(
      "BLOCKED_MISSING_PREREQUISITE: required pre-compress checkpoint unavailable: provider capability probe failed",
    );

    const failing = new RecordingProvider(
      "ext",
      {
        onPreCompress: () => {
          throw new TypeError("disk full");
        },
      },
      { checkpointVersion: 2 },
    );
    const { mgr } = managerWith(failing);
    const logger = capturingLogger();
    let caught: unknown;
    try {
      await preCompress(mgr, RAW, { checkpointRequired: true, logger });
    } catch (error) {
      caught = error;
    }
    expect((caught as Error).message).toBe(
      "BLOCKED_MISSING_PREREQUISITE: required pre-compress checkpoint unavailable: provider checkpoint API v2 failed",
    );
    expect((caught as Error).cause).toBeInstanceOf(TypeError);
    expect(logger.at("warn")).toEqual(["Required pre-compress checkpoint failed (TypeError)"]);
  });

  it('best effort: no manager → "", failures suppressed', async () => {
    expect(await preCompress(null, RAW, { checkpointRequired: false })).toBe("");
    const failing = new RecordingProvider(
      "ext",
      {
        onPreCompress: () => {
          throw new Error("x");
        },
      },
      { checkpointVersion: 2 },
    );
    expect(await preCompress(managerWith(failing).mgr, RAW, { checkpointRequired: false })).toBe("");
    const ok = new RecordingProvider("ext", { onPreCompress: () => "context" });
    expect(await preCompress(managerWith(ok).mgr, RAW, { checkpointRequired: false })).toBe("context");
  });
});

describe("checkpointRequiredWarning", () => {
  it("names the config key, the provider and false; silent when off or capable", () => {
    const { mgr } = managerWith(new RecordingProvider("builtin"), new RecordingProvider("holographic"));
    const warning = checkpointRequiredWarning(mgr, { checkpointRequired: true });
    expect(warning).toBe(
      "compression.checkpoint_required is enabled but the active memory provider (holographic) does not implement checkpoint API v2. Compress will fail closed. Recover by set compression.checkpoint_required: false, or switch to a memory provider that implements checkpoint API v2.",
    );
    expect(checkpointRequiredWarning(mgr, { checkpointRequired: false })).toBeNull();
    expect(checkpointRequiredWarning(null, { checkpointRequired: true })).toContain("(no active provider)");
    expect(checkpointRequiredWarning(managerWith(new RecordingProvider("builtin")).mgr, { checkpointRequired: true })).toContain(
      "(no active provider)",
    );
    const capable = managerWith(new RecordingProvider("ext", {}, { checkpointVersion: 2 })).mgr;
    expect(checkpointRequiredWarning(capable, { checkpointRequired: true })).toBeNull();
  });

  it("a throwing probe yields no warning (start-up continues)", () => {
    const broken = {
      providers: [],
      supportsPreCompressCheckpoint: () => {
        throw new Error("probe");
      },
      onPreCompress: async () => "",
    };
    expect(checkpointRequiredWarning(broken, { checkpointRequired: true })).toBeNull();
  });
});
