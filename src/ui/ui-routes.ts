/**
 * Serves the embedded admin UI under `/_/` (mounted at the root, before the operator 404):
 *   GET /_/                  index.html (no-cache; it names the hashed assets)
 *   GET /_/<page>[/...]      index.html for the UI's own pages (ui/src/page-names.ts): a reload
 *                            or a bookmarked deep link lands on the right page
 *   GET /_/assets/<hash>.*   the bundle, cached for a year (the name changes with the content)
 * Anything else under `/_/` falls through to the operator routes and their JSON 404, so the UI
 * never shadows `/_/api`, `/_/health`, `/_/ready`, `/_/metrics` or `/_/stats`.
 *
 * Every answer carries a strict Content-Security-Policy: scripts, styles, fonts and fetches from
 * this origin only, no inline script or style element, images also from blob: (previews),
 * no framing.
 */
import { Hono } from "hono";
import { PAGE_NAMES } from "../../ui/src/page-names.ts";
import { UI_ASSETS, UI_INDEX_HTML } from "./ui-assets.generated.ts";

export const UI_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob: data:",
  "media-src 'self' blob:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy": UI_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
  "x-frame-options": "DENY",
};

const INDEX_BYTES = new TextEncoder().encode(UI_INDEX_HTML);
const ASSET_BYTES = new Map(
  Object.entries(UI_ASSETS).map(([name, asset]) => [
    name,
    { type: asset.type, bytes: new TextEncoder().encode(asset.body) },
  ]),
);

function index(): Response {
  return new Response(INDEX_BYTES, {
    headers: {
      ...SECURITY_HEADERS,
      "content-type": "text/html; charset=utf-8",
      "content-length": String(INDEX_BYTES.byteLength),
      "cache-control": "no-cache",
    },
  });
}

export function uiRoutes(): Hono {
  const app = new Hono();
  app.get("/_/", () => index());
  app.get("/_/assets/:name", (c) => {
    const asset = ASSET_BYTES.get(c.req.param("name"));
    if (!asset) {
      return c.json({ error: "not_found", message: `No UI asset "${c.req.param("name")}"` }, 404);
    }
    return new Response(asset.bytes, {
      headers: {
        ...SECURITY_HEADERS,
        "content-type": asset.type,
        "content-length": String(asset.bytes.byteLength),
        "cache-control": "public, max-age=31536000, immutable",
      },
    });
  });
  for (const page of PAGE_NAMES) {
    app.get(`/_/${page}`, () => index());
    app.get(`/_/${page}/*`, () => index());
  }
  return app;
}
