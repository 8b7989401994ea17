/**
 * What `svc admin` commands use of the process beyond CommandIo: raw writes (the progress bar
 * redraws its line), whether stdout is a terminal and how wide, stdin for secrets, and the clock.
 */
import { type CommandIo, defaultIo } from "../command-io.ts";

export interface AdminIo extends CommandIo {
  /** Writes without a newline (progress redraws). */
  write(text: string): void;
  /** Whether stdout is a terminal (progress bar) rather than a pipe or file (plain lines). */
  stdoutIsTerminal: boolean;
  columns(): number;
  /** All of stdin as text (`--password-stdin`). */
  readStdin(): Promise<string>;
  /** Asks for a secret without echo; undefined when stdin is not a terminal. */
  promptSecret(label: string): Promise<string | undefined>;
  sleep(ms: number): Promise<void>;
}

const encoder = new TextEncoder();

async function promptSecret(label: string): Promise<string | undefined> {
  if (!Deno.stdin.isTerminal()) return undefined;
  Deno.stderr.writeSync(encoder.encode(label));
  Deno.stdin.setRaw(true);
  const bytes: number[] = [];
  const buffer = new Uint8Array(1);
  try {
    while (true) {
      const n = await Deno.stdin.read(buffer);
      if (n === null) break;
      const byte = buffer[0];
      if (byte === 3) throw new Error("Interrupted"); // Ctrl-C: raw mode delivers it as a byte
      if (byte === 13 || byte === 10) break;
      if (byte === 127 || byte === 8) bytes.pop();
      else bytes.push(byte);
    }
  } finally {
    Deno.stdin.setRaw(false);
    Deno.stderr.writeSync(encoder.encode("\n"));
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}

/** The process's own streams. */
export function processIo(): AdminIo {
  return {
    ...defaultIo(),
    write: (text) => Deno.stdout.writeSync(encoder.encode(text)),
    stdoutIsTerminal: Deno.stdout.isTerminal(),
    columns: () => {
      try {
        return Deno.consoleSize().columns;
      } catch {
        return 80;
      }
    },
    readStdin: () => new Response(Deno.stdin.readable).text(),
    promptSecret,
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  };
}
