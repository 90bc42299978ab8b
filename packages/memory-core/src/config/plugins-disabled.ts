import { isScalar, isSeq, type Document } from "yaml";
import { HermesMemoryError } from "../errors.js";
import { configFilePath, readConfig, setDocumentValue, updateConfig } from "./config-file.js";

/** What `setPluginDisabled` did. */
export interface PluginDisabledChange {
  /** config.yaml was rewritten (false when it already said what was asked). */
  changed: boolean;
  /** `plugins.disabled` after the change. */
  disabled: string[];
  configPath: string;
}

function notAList(file: string): HermesMemoryError {
  return new HermesMemoryError({
    code: "INVALID_CONFIG",
    message: `Cannot edit plugins.disabled in ${file}: it holds a value that is not a list. Make it a list of plugin names (e.g. \`disabled: [notes]\`) or remove it, then retry; nothing was written.`,
  });
}

function itemText(item: unknown): string | null {
  const value = isScalar(item) ? item.value : item;
  return typeof value === "string" ? value.trim() : null;
}

function editDisabled(doc: Document, file: string, names: ReadonlySet<string>, add: string | null): void {
  const node = doc.getIn(["plugins", "disabled"], true);
  const seq = isSeq(node) ? node : null;
  if (seq === null && node !== undefined && !(isScalar(node) && node.value == null)) throw notAList(file);
  if (add !== null) {
    if (seq === null) setDocumentValue(doc, ["plugins", "disabled"], [add]);
    else if (!seq.items.some((item) => itemText(item) === add)) seq.add(doc.createNode(add));
    return;
  }
  if (seq === null) return;
  for (let i = seq.items.length - 1; i >= 0; i--) {
    const text = itemText(seq.items[i]);
    if (text !== null && names.has(text)) seq.delete(i);
  }
}

/**
 * Disable or re-enable a plugin in `$HERMES_HOME/config.yaml` `plugins.disabled`, through
 * `updateConfig` (lock, strict UTF-8, comments and other keys kept). Disabling adds `name` unless
 * one of `aliases` (or `name`) is listed already; enabling removes every entry equal to `name` or
 * one of `aliases` (a provider is disabled under its provider, folder or package name). Writes
 * nothing when the list already says what was asked. Throws `INVALID_CONFIG` when
 * `plugins.disabled` is not a list (it is never replaced) or config.yaml is unreadable.
 */
export async function setPluginDisabled(
  hermesHome: string,
  change: { name: string; disabled: boolean; aliases?: readonly string[] },
): Promise<PluginDisabledChange> {
  const file = configFilePath(hermesHome);
  const names = new Set([change.name, ...(change.aliases ?? [])].map((n) => n.trim()).filter((n) => n !== ""));
  const listed = (disabled: readonly string[]) => disabled.some((entry) => names.has(entry));
  const before = await readConfig(hermesHome);
  // A malformed list reads as empty; it is refused rather than reported as "nothing disabled".
  if (before.warnings.some((w) => w.includes("plugins.disabled must be a list"))) throw notAList(file);
  if (change.disabled === listed(before.plugins.disabled))
    return { changed: false, disabled: [...before.plugins.disabled], configPath: file };
  await updateConfig(hermesHome, (doc) => editDisabled(doc, file, names, change.disabled ? change.name.trim() : null));
  const after = await readConfig(hermesHome);
  return { changed: true, disabled: [...after.plugins.disabled], configPath: file };
}
