/**
 * Worker thread of the archive codec: expansion and contraction are CPU work (tens of MB/s), so
 * they run here, off the server's event loop, one job per worker. The facade
 * (archive-codec.ts) ends the worker to abort a job.
 * Protocol: one request, one reply, then the worker is terminated by its owner.
 */
/// <reference lib="deno.worker" />
import { isFormatProblem } from "./byte-io.ts";
import { type ArchiveFormat, contractSync, type ExpandResult, expandSync } from "./token-files.ts";

export type ArchiveRequest =
  | { op: "expand"; format: ArchiveFormat; inPath: string; outPath: string }
  | { op: "contract"; expandedPath: string; outPath: string };

export type ArchiveReply =
  | { ok: true; expand: ExpandResult }
  | { ok: true; contract: { size: number; sha256: string } }
  | { ok: false; message: string; damaged: boolean };

self.onmessage = (event: MessageEvent<ArchiveRequest>) => {
  const request = event.data;
  let reply: ArchiveReply;
  try {
    reply = request.op === "expand"
      ? { ok: true, expand: expandSync(request.format, request.inPath, request.outPath) }
      : { ok: true, contract: contractSync(request.expandedPath, request.outPath) };
  } catch (err) {
    reply = {
      ok: false,
      message: err instanceof Error ? err.message : String(err),
      damaged: isFormatProblem(err),
    };
  }
  self.postMessage(reply);
};
