/**
 * A modest scanner for memory entries. Built-in memory is injected verbatim into every system
 * prompt, so an entry must not smuggle in instructions that override it, invisible characters that
 * hide text from the user, or commands that exfiltrate credentials.
 */

/** Entries longer than this are not scanned (and are kept out of the system prompt snapshot). */
export const THREAT_SCAN_WINDOW = 10_000;

/** One threat pattern; `id` is what error messages and snapshot placeholders name. */
export interface ThreatPattern {
  id: string;
  pattern: RegExp;
}

/** The patterns checked, in reporting order. */
export const THREAT_PATTERNS: readonly ThreatPattern[] = Object.freeze([
  {
    id: "prompt_injection",
    pattern:
      /\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+|your\s+|every\s+)*(?:previous|prior|above|earlier|preceding|system|developer)\s+(?:instructions?|prompts?|messages?|rules|directions|guidelines)\b/i,
  },
  {
    id: "role_override",
    pattern:
      /\b(?:you\s+are\s+now\s+(?:in\s+)?(?:developer|jailbreak|dan|god|admin|unrestricted)\b|new\s+system\s+prompt\s*:|from\s+now\s+on,?\s+you\s+(?:must\s+)?ignore\b)/i,
  },
  {
    id: "fake_system_tag",
    pattern: /<\/?(?:system|system-prompt|memory-context|im_start|im_end)\b[^>]*>|\[\/?(?:SYSTEM|INST)\]/i,
  },
  {
    id: "invisible_unicode",
    // Zero-width, word-joiner, BOM and bidirectional override/isolate characters.
    pattern: /[\u200B-\u200F\u2028\u2029\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/,
  },
  {
    id: "credential_exfiltration",
    pattern:
      /\b(?:curl|wget|fetch|invoke-webrequest|nc|ncat)\b[^\n]*(?:\$\{?[A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASS|CREDENTIAL)[A-Z0-9_]*\}?|\.env\b|\.ssh\/|id_rsa|credentials\.json)/i,
  },
  {
    id: "secret_file_read",
    pattern: /\b(?:cat|type|less|more|head|tail)\s+[^\n]*(?:~\/\.ssh\/id_|\/\.aws\/credentials|\$HERMES_HOME\/\.env|~\/\.hermes\/\.env)/i,
  },
]);

/** What `scanMemoryContent` found. */
export interface ThreatScanResult {
  /** The text is longer than `THREAT_SCAN_WINDOW` and was not scanned. */
  tooLarge: boolean;
  /** Ids of the matching patterns (empty when clean). */
  threats: string[];
}

/**
 * All patterns as one case-insensitive alternation: it matches every text that any pattern matches
 * (case-insensitivity only widens a pattern), so a text it does not match is clean after one
 * regex run instead of one per pattern. A match is then checked pattern by pattern. Built only
 * while every pattern's flags are at most `i` (another flag, such as `u` or `s`, changes what its
 * source means, and the alternation could then miss what the pattern matches).
 */
const ANY_THREAT = THREAT_PATTERNS.every((t) => /^i?$/.test(t.pattern.flags))
  ? new RegExp(THREAT_PATTERNS.map((t) => `(?:${t.pattern.source})`).join("|"), "i")
  : null;

/** Scan one entry. Pure; never throws. */
export function scanMemoryContent(text: string): ThreatScanResult {
  if (text.length > THREAT_SCAN_WINDOW) return { tooLarge: true, threats: [] };
  if (ANY_THREAT && !ANY_THREAT.test(text)) return { tooLarge: false, threats: [] };
  const threats = THREAT_PATTERNS.filter((t) => t.pattern.test(text)).map((t) => t.id);
  return { tooLarge: false, threats };
}

/**
 * The error message for a write whose content was blocked, or `null` when it may be stored.
 * Called before any add/replace touches disk.
 */
export function describeBlockedContent(text: string): string | null {
  const result = scanMemoryContent(text);
  if (result.tooLarge) {
    return `Content is too large to scan (${text.length} chars, limit ${THREAT_SCAN_WINDOW}). Store a shorter summary instead.`;
  }
  if (result.threats.length === 0) return null;
  return `Content blocked: matches threat pattern(s): ${result.threats.join(", ")}. Memory entries are injected into the system prompt, so they must not contain instructions that override it, invisible characters or commands that send credentials elsewhere. Rephrase the fact as plain information.`;
}

/**
 * The entry as it may appear in the system prompt: unchanged when clean, otherwise a
 * `[BLOCKED: …]` placeholder telling the model how to delete the original.
 */
export function sanitizeSnapshotEntry(entry: string, fileName: string): string {
  const result = scanMemoryContent(entry);
  if (result.tooLarge) {
    return `[BLOCKED: ${fileName} entry too large to scan (${entry.length} chars). Removed from system prompt; use memory(action=remove) to delete the original.]`;
  }
  if (result.threats.length > 0) {
    return `[BLOCKED: ${fileName} entry contained threat pattern(s): ${result.threats.join(", ")}. Removed from system prompt; use memory(action=remove) to delete the original.]`;
  }
  return entry;
}
