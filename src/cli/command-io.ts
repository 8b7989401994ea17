/**
 * What a CLI command reads and writes besides its arguments: the environment and the two output
 * streams. Commands take it as a parameter so tests run them in process and read what they said.
 */
export interface CommandIo {
  env: Record<string, string | undefined>;
  stdout: (line: string) => void;
  stderr: (line: string) => void;
}

/** The process's own environment, stdout and stderr. */
export const defaultIo = (): CommandIo => ({
  env: Deno.env.toObject(),
  stdout: (line) => console.log(line),
  stderr: (line) => console.error(line),
});
