/**
 * packaging/svc.service: the directives an edge install relies on are there, and
 * `systemd-analyze verify` accepts the unit without a single warning (it exits 0 even for unknown
 * keys and unparsable values, so any output fails the test). verify checks that ExecStart's binary
 * exists, so it runs on a copy starting /bin/true; skipped where systemd-analyze is not installed.
 */
import assert from "node:assert/strict";

const UNIT_URL = new URL("../packaging/svc.service", import.meta.url);

function hasSystemdAnalyze(): boolean {
  try {
    return new Deno.Command("systemd-analyze", {
      args: ["--version"],
      stdout: "null",
      stderr: "null",
    })
      .outputSync().success;
  } catch {
    return false;
  }
}

/** `section` → key → every value given for it, in order (comments and blank lines skipped). */
function parseUnit(text: string): Map<string, Map<string, string[]>> {
  const sections = new Map<string, Map<string, string[]>>();
  let current: Map<string, string[]> | undefined;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      current = new Map();
      sections.set(header[1], current);
      continue;
    }
    const eq = line.indexOf("=");
    assert.ok(current !== undefined && eq > 0, `Unexpected unit line "${line}"`);
    const key = line.slice(0, eq);
    current.set(key, [...current.get(key) ?? [], line.slice(eq + 1)]);
  }
  return sections;
}

/** Runs verify on `text` saved as svc.service in a temp directory; its combined output. */
async function verify(text: string): Promise<{ success: boolean; output: string }> {
  const dir = await Deno.makeTempDir({ prefix: "svc-unit-test-" });
  try {
    const path = `${dir}/svc.service`;
    await Deno.writeTextFile(path, text);
    const result = await new Deno.Command("systemd-analyze", {
      args: ["verify", "--man=no", path],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const decoder = new TextDecoder();
    return {
      success: result.success,
      output: (decoder.decode(result.stdout) + decoder.decode(result.stderr)).trim(),
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const withTrueBinary = (text: string) => text.replace(/^ExecStart=.*$/m, "ExecStart=/bin/true");

Deno.test("svc.service sets the user, data directory, hardening, limits and reload", async () => {
  const service = parseUnit(await Deno.readTextFile(UNIT_URL)).get("Service");
  assert.ok(service, "no [Service] section");
  const expected: Record<string, string> = {
    User: "svc",
    Group: "svc",
    ExecStart: "/usr/local/bin/svc --config /etc/svc/svc.yaml",
    ExecReload: "/bin/kill -HUP $MAINPID",
    Restart: "on-failure",
    StateDirectory: "svc",
    WorkingDirectory: "/var/lib/svc",
    ProtectSystem: "strict",
    ProtectHome: "yes",
    PrivateTmp: "yes",
    NoNewPrivileges: "yes",
    LimitNOFILE: "65536",
  };
  for (const [key, value] of Object.entries(expected)) {
    assert.deepEqual(service.get(key), [value], `${key}=`);
  }
  // V8 compiles JavaScript to machine code at run time: this would kill svc at its first request.
  assert.equal(service.get("MemoryDenyWriteExecute"), undefined);
});

Deno.test({
  name: "systemd-analyze verify accepts svc.service without a warning",
  ignore: !hasSystemdAnalyze(),
  async fn() {
    const text = await Deno.readTextFile(UNIT_URL);
    const result = await verify(withTrueBinary(text));
    assert.equal(result.output, "");
    assert.ok(result.success);
    // The check itself works here: a value it cannot parse is reported.
    const broken = await verify(withTrueBinary(text).replace("LimitNOFILE=65536", "LimitNOFILE=x"));
    assert.match(broken.output, /LimitNOFILE|resource value/);
  },
});
