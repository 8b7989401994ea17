/** A minimal ObjectCreated event for unit tests of the outbox, its routes and the dispatcher. */
import type { ObjectEvent } from "../events/event.ts";

export function sampleEvent(key: string, at = 1_000): ObjectEvent {
  return {
    id: crypto.randomUUID(),
    kind: "ObjectCreated",
    operation: "put",
    bucket: "b",
    key,
    size: 1,
    etag: "e",
    sha256: null,
    storage: "passthrough",
    content_type: null,
    principal: null,
    source_ip: null,
    request_id: null,
    time: new Date(at).toISOString(),
  };
}
