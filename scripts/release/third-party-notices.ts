/**
 * Writes THIRD_PARTY_NOTICES.txt for a release: the Deno runtime the binary is built on, every
 * npm package the server bundles (production dependencies, for the platforms svc is released
 * for) and every package bundled into the admin UI, each with its license text.
 *
 *   node_modules/.bin/deno run -A scripts/release/third-party-notices.ts <out-file>
 */
import { buildUi } from "../build-ui.ts";
import { formatNotices, type PackageLicense, packageLicense, serverPackages } from "./licenses.ts";

export interface Notices {
  text: string;
  server: PackageLicense[];
  ui: PackageLicense[];
}

export async function thirdPartyNotices(): Promise<Notices> {
  const server = await Promise.all((await serverPackages()).map((name) => packageLicense(name)));
  const ui = await Promise.all((await buildUi()).packages.map((name) => packageLicense(name)));
  const runtime = { ...(await packageLicense("deno")), name: "Deno runtime (denort)" };
  const text = [
    "svc is licensed under the Apache License 2.0 (LICENSE). The svc binary also contains the",
    "third-party software below, under the licenses quoted. The Deno runtime embeds further",
    "components (V8, Rust crates); their notices are published with Deno",
    "(https://github.com/denoland/deno).",
    "",
    formatNotices("The runtime", [runtime]),
    formatNotices("npm packages in the server", server),
    formatNotices("npm packages in the admin UI (also quoted at the end of its script)", ui),
  ].join("\n");
  return { text, server, ui };
}

if (import.meta.main) {
  const out = Deno.args[0];
  if (!out) {
    console.error("Usage: third-party-notices.ts <out-file>");
    Deno.exit(2);
  }
  const notices = await thirdPartyNotices();
  await Deno.writeTextFile(out, notices.text);
  console.log(
    `wrote ${out}: ${notices.server.length} server packages, ${notices.ui.length} UI packages`,
  );
}
