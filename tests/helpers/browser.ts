/**
 * Browser tests drive Debian's chromium through playwright-core (never a downloaded browser).
 * `browserOrSkip()` answers null, with a printed reason, when chromium is not installed, so the
 * suite skips these tests cleanly on a machine without it (.ci/run installs it).
 */
import { type Browser, chromium, type Page } from "playwright-core";

const CANDIDATES = [Deno.env.get("SVC_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"];

export const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** The chromium executable, or null. */
export function chromiumPath(): string | null {
  for (const path of CANDIDATES) {
    if (!path) continue;
    try {
      if (Deno.statSync(path).isFile) return path;
    } catch { /* not here */ }
  }
  return null;
}

/** Whether browser tests can run; prints why not once. */
export const browserReason: string | null = chromiumPath() === null
  ? "chromium is not installed (apt-get install chromium): browser tests skipped"
  : null;
if (browserReason) console.warn(`[skip] ${browserReason}`);

export async function launchBrowser(): Promise<Browser> {
  return await chromium.launch({ executablePath: chromiumPath()!, args: CHROMIUM_FLAGS });
}

/** Where screenshots go (gitignored): test-artifacts/ui/<name>.png. */
export const ARTIFACTS = new URL("../../test-artifacts/ui/", import.meta.url).pathname;

export async function screenshot(page: Page, name: string): Promise<void> {
  await Deno.mkdir(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: `${ARTIFACTS}${name}.png`, fullPage: true });
}

/** Collects console errors and failed requests of a page, for assertion messages. */
export function watchPage(page: Page): string[] {
  const problems: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
  return problems;
}
