import assert from "node:assert/strict";
import * as v from "valibot";
import { eventDeliverySchema } from "../config/schema/schema-advanced.ts";
import type { DeliveredEvent } from "./event.ts";
import { deliveryRequests, slackChannels, slackText, slackWants, webhookUrls } from "./formats.ts";
import { verifySignature } from "./signing.ts";

const settings = (input: v.InferInput<typeof eventDeliverySchema>) =>
  v.parse(eventDeliverySchema, input);

function event(bucket: string, key: string, kind = "ObjectCreated"): DeliveredEvent {
  return {
    id: "11111111-2222-3333-4444-555555555555",
    seq: 7,
    kind: kind as DeliveredEvent["kind"],
    operation: "put",
    bucket,
    key,
    size: 2048,
    etag: "abc",
    sha256: null,
    storage: "passthrough",
    content_type: "text/plain",
    principal: "alice",
    source_ip: "10.0.0.1",
    request_id: "R1",
    time: "2026-01-01T00:00:00.000Z",
  };
}

Deno.test("raw: one request per distinct endpoint with the envelope, headers and a signature", () => {
  const config = settings({
    webhook_url: "http://a/hook",
    webhook_urls: ["http://b/hook", "http://a/hook"],
    webhook_headers: { authorization: "Bearer t" },
    webhook_secret: "s3cret",
  });
  assert.deepEqual(webhookUrls(config), ["http://a/hook", "http://b/hook"]);
  const requests = deliveryRequests(event("b", "k"), config, 1_700_000_000_000);
  assert.equal(requests.length, 2);
  const [first] = requests;
  assert.deepEqual(JSON.parse(first.body), { schema: "svc.event.v1", event: event("b", "k") });
  assert.equal(first.headers.authorization, "Bearer t");
  assert.equal(first.headers["x-svc-event-id"], event("b", "k").id);
  assert.equal(first.headers["x-svc-event-kind"], "ObjectCreated");
  const signature = first.headers["x-svc-signature"];
  assert.match(signature, /^t=1700000000,v1=[0-9a-f]{64}$/);
  assert.equal(verifySignature("s3cret", signature, first.body, 1_700_000_010_000), true);
  assert.equal(verifySignature("other", signature, first.body, 1_700_000_010_000), false);
  assert.equal(verifySignature("s3cret", signature, first.body + " ", 1_700_000_010_000), false);
  assert.equal(verifySignature("s3cret", signature, first.body, 1_700_001_000_000), false, "old");
  assert.equal(verifySignature("s3cret", null, first.body, 1_700_000_010_000), false);
  const unsigned = deliveryRequests(event("b", "k"), settings({ webhook_url: "http://a" }), 0);
  assert.equal(unsigned[0].headers["x-svc-signature"], undefined);
});

Deno.test("slack filters: kinds, include and exclude globs over the key, * crossing / (exclude wins)", () => {
  const config = settings({
    format: "slack",
    webhook_url: "http://hooks/x",
    slack_include_globs: ["logs/**", "*.csv"],
    slack_exclude_globs: ["logs/tmp/**", "*.tmp"],
  });
  assert.equal(slackWants(event("any", "logs/a/b.txt"), config), true);
  assert.equal(slackWants(event("any", "logs/tmp/x"), config), false);
  assert.equal(slackWants(event("data", "x.csv"), config), true);
  assert.equal(slackWants(event("data", "deep/x.csv"), config), true, "* crosses /");
  assert.equal(slackWants(event("data", "deep/x.csv.tmp"), config), false, "exclude wins");
  assert.equal(slackWants(event("logs", "a/b.txt"), config), false, "the bucket is not matched");
  assert.equal(slackWants(event("other", "x"), config), false);
  assert.equal(slackWants(event("logs", "logs/a", "ObjectDeleted"), config), false, "kinds");
  const all = settings({ format: "slack", slack_notify_kinds: ["ObjectDeleted"] });
  assert.equal(slackWants(event("any", "x", "ObjectDeleted"), all), true);
  assert.deepEqual(deliveryRequests(event("other", "x"), config, 0), [], "filtered: no target");
});

Deno.test("slack bot routes: every matching route, else the fallback channel", () => {
  const config = settings({
    format: "slack",
    slack_bot_token: "xoxb-1",
    slack_channel: "#fallback",
    slack_api_url: "http://slack.test/api/",
    slack_username: "svc",
    slack_routes: [
      { name: "logs", bucket: "b", prefix_globs: ["logs/**"], channel: "C1" },
      { name: "any-b", bucket: "b", channel: "#b" },
      { name: "any", channel: "#b" },
    ],
  });
  assert.deepEqual(slackChannels(event("b", "logs/x"), config), ["C1", "#b"]);
  assert.deepEqual(slackChannels(event("b", "other"), config), ["#b"]);
  const narrow = settings({ ...config, slack_routes: [config.slack_routes[0]] });
  assert.deepEqual(slackChannels(event("c", "logs/x"), narrow), ["#fallback"]);
  const [request] = deliveryRequests(event("c", "k"), narrow, 0);
  assert.equal(request.url, "http://slack.test/api/chat.postMessage");
  assert.equal(request.headers.authorization, "Bearer xoxb-1");
  assert.equal(request.expectOkField, true);
  assert.equal(request.target, "slack:#fallback");
  assert.deepEqual(JSON.parse(request.body), {
    channel: "#fallback",
    text: slackText(event("c", "k")),
    username: "svc",
  });
});

Deno.test("slack text escapes Slack's control characters and names size and principal", () => {
  const text = slackText({ ...event("b", "a<b>&c"), principal: "<!channel>" });
  assert.equal(text, "Object created: `b/a&lt;b&gt;&amp;c` (2.0 KiB) by &lt;!channel&gt;");
});

Deno.test("lifecycle events: raw carries the lifecycle detail; slack names the rule", () => {
  const expired: DeliveredEvent = {
    ...event("b", "logs/old.txt", "LifecycleExpired"),
    operation: "lifecycle",
    principal: null,
    lifecycle: {
      rule: "expire-logs",
      action: "expire",
      object_created_at: "2025-12-01T00:00:00.000Z",
      expiration_age_seconds: 2_678_400,
      expire_after: "30d",
      content_length: 2048,
    },
  };
  const [raw] = deliveryRequests(expired, settings({ webhook_url: "http://a/h" }), 0);
  assert.deepEqual(JSON.parse(raw.body).event.lifecycle, expired.lifecycle);
  assert.equal(
    slackText(expired),
    "Object expired: `b/logs/old.txt` (2.0 KiB) by lifecycle rule expire-logs",
  );
  const moved: DeliveredEvent = {
    ...expired,
    kind: "LifecycleTransitioned",
    lifecycle: {
      rule: "archive",
      action: "transition",
      object_created_at: "2025-12-01T00:00:00.000Z",
      content_length: 2048,
      source_bucket: "b",
      source_key: "logs/old.txt",
      destination_bucket: "cold",
      destination_key: "logs/old.txt",
      copied_bytes: 2048,
    },
  };
  assert.equal(
    slackText(moved),
    "Object transitioned: `b/logs/old.txt` → `cold/logs/old.txt` (2.0 KiB) by lifecycle rule archive",
  );
  // Slack sends only the kinds asked for.
  const slack = settings({ format: "slack", webhook_url: "http://s/h" });
  assert.equal(slackWants(moved, slack), false);
  const wanted = settings({
    format: "slack",
    webhook_url: "http://s/h",
    slack_notify_kinds: ["LifecycleTransitioned"],
  });
  assert.equal(slackWants(moved, wanted), true);
});
