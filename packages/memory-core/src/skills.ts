import fsp from "node:fs/promises";
import path from "node:path";
import { HermesMemoryError } from "./errors.js";
import { manifestReadReason, readManifestFile, type ManifestRead } from "./discovery/bounded-read.js";
import { getHermesHome } from "./profile.js";

/** A skill a provider registered: read-only instructions the agent can open with `skillView`. */
export interface ProviderSkill {
  /** Qualified name `provider:skill`. */
  name: string;
  /** Absolute path of the SKILL.md file, or of a folder holding one. */
  path: string;
  description: string;
}

interface SkillRecord extends ProviderSkill {
  provider: string;
}

/** Skill names: letters, digits, `.`, `_`, `-` (the provider part is added by the registry). */
export const SKILL_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

// Tracked per profile home, so activating another provider in one profile retracts the previous
// provider's skills there without touching other profiles.
const registry = new Map<string, Map<string, SkillRecord>>();

/**
 * Record the skills of the active provider of `hermesHome`, replacing the skills any other
 * provider registered for that home. Called by the loader; hosts use `skillView`/`listSkills`.
 */
export function replaceProviderSkills(hermesHome: string, provider: string, skills: ProviderSkill[]): void {
  const home = path.resolve(hermesHome);
  const entries = new Map<string, SkillRecord>();
  for (const skill of skills) entries.set(skill.name, { ...skill, provider });
  registry.set(home, entries);
}

/** Forget every provider skill (tests, or a host shutting memory down). */
export function clearProviderSkills(hermesHome?: string): void {
  if (hermesHome === undefined) registry.clear();
  else registry.delete(path.resolve(hermesHome));
}

/**
 * Skills registered by the active provider of one profile home (default: the active profile,
 * `getHermesHome()`). Profiles never see each other's provider skills. Provider skills are opened
 * on demand and are not meant for the system-prompt skill index.
 */
export function listSkills(hermesHome: string = getHermesHome()): ProviderSkill[] {
  const skills = registry.get(path.resolve(hermesHome)) ?? new Map<string, SkillRecord>();
  return [...skills.values()]
    .map(({ name, path: file, description }) => ({ name, path: file, description }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * The text of a provider skill (`'provider:skill'`): its SKILL.md, looked up in one profile home
 * only (default: the active profile). Throws `SKILL_NOT_FOUND` for a name that profile's active
 * provider did not register and `STORAGE_FAILED` when the file cannot be read.
 */
export async function skillView(qualifiedName: string, hermesHome: string = getHermesHome()): Promise<string> {
  const home = path.resolve(hermesHome);
  const record = registry.get(home)?.get(qualifiedName);
  if (!record) {
    const known = listSkills(home).map((s) => s.name);
    throw new HermesMemoryError({
      code: "SKILL_NOT_FOUND",
      message: `No memory provider skill named '${qualifiedName}' in profile ${home} (known there: ${known.join(", ") || "none"}). Skills are registered only by the profile's active provider (memory.provider) when it is loaded; use the form 'provider:skill' and run in that profile (runWithProfile).`,
    });
  }
  let file = record.path;
  let read: ManifestRead;
  try {
    if ((await fsp.stat(file)).isDirectory()) file = path.join(file, "SKILL.md");
    // Never blocks on a FIFO nor reads a device without end; a skill is a small text file.
    read = await readManifestFile(file, MAX_SKILL_BYTES);
  } catch (error) {
    read = { error: error as NodeJS.ErrnoException };
  }
  if ("text" in read) return read.text;
  throw new HermesMemoryError({
    code: "STORAGE_FAILED",
    message: `Cannot read skill '${qualifiedName}' at ${file}: ${manifestReadReason(read)}. Reinstall the '${record.provider}' memory provider.`,
    ...("error" in read ? { cause: read.error } : {}),
  });
}

/** Largest skill file read (a skill is instructions for the model, a few KB). */
const MAX_SKILL_BYTES = 1024 * 1024;
