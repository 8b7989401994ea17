/**
 * What one event becomes on the wire: a list of requests, one per target (an endpoint, or a Slack
 * channel in bot-token mode). A target's name is what the outbox remembers once it answered, so
 * a retry is sent only to the targets that have not taken the event yet.
 *
 * `webhook_headers` go with every request (bot mode: its Authorization header wins).
 * - `raw` (default): POST `{"schema": "svc.event.v1", "event": {...}}` to `webhook_url` and every
 *   `webhook_urls` entry, with `webhook_headers`, `X-Svc-Event-Id`, `X-Svc-Event-Kind` and, with
 *   a `webhook_secret`, `X-Svc-Signature` (signing.ts).
 * - `slack`, incoming-webhook mode (no `slack_bot_token`): POST `{text, username?, icon_emoji?}`
 *   to the webhook URL(s), as Slack's incoming webhooks take it.
 * - `slack`, bot-token mode: POST `<slack_api_url>/chat.postMessage` with `Authorization: Bearer
 *   <token>` and `{channel, text, username?, icon_emoji?}`, once per channel: every `slack_routes`
 *   entry whose `bucket` (absent = any) and `prefix_globs` (empty = any key) match, else
 *   `slack_channel`. Slack answers 200 with `{"ok": false}` on failure: only `ok: true` counts.
 * - Slack filters: the kind must be in `slack_notify_kinds`; `slack_include_globs` (empty = all)
 *   and `slack_exclude_globs` match the object key (exclude wins), and so do route
 *   `prefix_globs`, in the reference implementation's dialect (`*` crosses `/`: lib/glob.ts
 *   `keyGlobMatcher`). A filtered-out event has no target and counts as delivered.
 */
import type { EventDeliveryConfig } from "../config/mod.ts";
import { type DeliveredEvent, EVENT_SCHEMA, type ObjectEvent } from "./event.ts";
import { SIGNATURE_HEADER, signatureHeader } from "./signing.ts";
import { keyGlobMatcher } from "../lib/mod.ts";

export interface DeliveryRequest {
  /** Stable name of the target (the URL, or `slack:<channel>`). */
  target: string;
  url: string;
  headers: Record<string, string>;
  body: string;
  /** Slack Web API: the answer's JSON must say `ok: true`. */
  expectOkField: boolean;
}

/** The endpoints of the webhook modes: `webhook_url` then `webhook_urls`, each once. */
export function webhookUrls(config: EventDeliveryConfig): string[] {
  return [
    ...new Set([...(config.webhook_url ? [config.webhook_url] : []), ...config.webhook_urls]),
  ];
}

/** The raw envelope (what `format: raw` sends). */
export function rawEnvelope(event: DeliveredEvent): { schema: string; event: DeliveredEvent } {
  return { schema: EVENT_SCHEMA, event };
}

const globCache = new Map<string, (text: string) => boolean>();
function matchesAny(globs: readonly string[], text: string): boolean {
  return globs.some((glob) => {
    let matcher = globCache.get(glob);
    if (matcher === undefined) {
      if (globCache.size > 1000) globCache.clear();
      matcher = keyGlobMatcher(glob);
      globCache.set(glob, matcher);
    }
    return matcher(text);
  });
}

/** Whether the Slack filters let this event through. */
export function slackWants(event: ObjectEvent, config: EventDeliveryConfig): boolean {
  if (!config.slack_notify_kinds.includes(event.kind)) return false;
  // The key alone, in the reference implementation's dialect: configs written for it filter the
  // same here (lib/glob.ts).
  if (matchesAny(config.slack_exclude_globs, event.key)) return false;
  return config.slack_include_globs.length === 0 ||
    matchesAny(config.slack_include_globs, event.key);
}

/** Bot-token mode: the channels an event goes to (matching routes, else the fallback). */
export function slackChannels(event: ObjectEvent, config: EventDeliveryConfig): string[] {
  const routed = config.slack_routes.filter((route) =>
    (route.bucket === undefined || route.bucket === event.bucket) &&
    (route.prefix_globs.length === 0 || matchesAny(route.prefix_globs, event.key))
  ).map((route) => route.channel);
  if (routed.length > 0) return [...new Set(routed)];
  return config.slack_channel ? [config.slack_channel] : [];
}

function humanSize(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes, unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** Escapes what Slack's mrkdwn treats as control characters (its documented three). */
function slackEscape(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

/** The message text: what happened, where, how big, by whom. */
export function slackText(event: ObjectEvent): string {
  const where = `\`${slackEscape(event.bucket)}/${slackEscape(event.key)}\``;
  const rule = event.lifecycle ? ` by lifecycle rule ${slackEscape(event.lifecycle.rule)}` : "";
  if (event.kind === "LifecycleTransitioned") {
    const to = `${event.lifecycle?.destination_bucket ?? "?"}/${
      event.lifecycle?.destination_key ?? "?"
    }`;
    return `Object transitioned: ${where} → \`${slackEscape(to)}\`` +
      ` (${humanSize(event.size)})${rule}`;
  }
  if (event.kind === "LifecycleExpired") {
    return `Object expired: ${where} (${humanSize(event.size)})${rule}`;
  }
  const verb = event.kind === "ObjectCreated" ? "created" : "deleted";
  const who = event.principal ? ` by ${slackEscape(event.principal)}` : "";
  return `Object ${verb}: ${where} (${humanSize(event.size)})${who}`;
}

function slackStyle(config: EventDeliveryConfig): Record<string, string> {
  return {
    ...(config.slack_username ? { username: config.slack_username } : {}),
    ...(config.slack_icon_emoji ? { icon_emoji: config.slack_icon_emoji } : {}),
  };
}

/** The requests that deliver `event` under `config` now (empty: nothing to send). */
export function deliveryRequests(
  event: DeliveredEvent,
  config: EventDeliveryConfig,
  nowMs: number,
): DeliveryRequest[] {
  const json = { "content-type": "application/json; charset=utf-8" };
  if (config.format === "slack") {
    if (!slackWants(event, config)) return [];
    const text = slackText(event);
    if (config.slack_bot_token !== undefined) {
      const url = `${config.slack_api_url.replace(/\/+$/, "")}/chat.postMessage`;
      return slackChannels(event, config).map((channel) => ({
        target: `slack:${channel}`,
        url,
        headers: {
          ...json,
          ...config.webhook_headers,
          authorization: `Bearer ${config.slack_bot_token}`,
        },
        body: JSON.stringify({ channel, text, ...slackStyle(config) }),
        expectOkField: true,
      }));
    }
    const body = JSON.stringify({ text, ...slackStyle(config) });
    return webhookUrls(config).map((url) => ({
      target: url,
      url,
      headers: { ...json, ...config.webhook_headers, ...signed(config, body, nowMs) },
      body,
      expectOkField: false,
    }));
  }
  const body = JSON.stringify(rawEnvelope(event));
  return webhookUrls(config).map((url) => ({
    target: url,
    url,
    headers: {
      ...json,
      ...config.webhook_headers,
      "x-svc-event-id": event.id,
      "x-svc-event-kind": event.kind,
      ...signed(config, body, nowMs),
    },
    body,
    expectOkField: false,
  }));
}

function signed(config: EventDeliveryConfig, body: string, nowMs: number): Record<string, string> {
  return config.webhook_secret
    ? { [SIGNATURE_HEADER]: signatureHeader(config.webhook_secret, body, nowMs) }
    : {};
}
