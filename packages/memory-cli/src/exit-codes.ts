/** Process exit codes of `hermes-memory`. Scripts may rely on them; they never change meaning. */
export const ExitCode = {
  /** The command did what was asked. */
  ok: 0,
  /** The user asked for something that cannot be done as asked; stderr has one line with the remedy. */
  userError: 1,
  /** A bug or an unexpected failure inside the CLI or a provider. */
  internalError: 2,
} as const;

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];
