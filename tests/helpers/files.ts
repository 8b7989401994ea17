/** Every file under `dir`, recursively, sorted: what a test searches for leaks or checks modes of. */
export function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of Deno.readDirSync(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) out.push(...filesUnder(path));
    else if (entry.isFile) out.push(path);
  }
  return out.sort();
}
