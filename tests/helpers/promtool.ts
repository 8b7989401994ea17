/** `promtool check metrics` over an exposition, for the metrics tests. */

/** Exit code and output of `promtool check metrics`, or undefined when promtool is absent. */
export async function promtool(
  body: string,
): Promise<{ code: number; output: string } | undefined> {
  let child;
  try {
    child = new Deno.Command("promtool", {
      args: ["check", "metrics"],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(body));
  await writer.close();
  const { code, stdout, stderr } = await child.output();
  return { code, output: new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr) };
}
