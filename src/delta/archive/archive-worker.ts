/**
 * Worker thread of the archive codec: expansion and contraction are CPU work (tens of MB/s), so
 * they run here, off the server's event loop, one job at a time (a job's predicted streams may use helper threads too). The facade (archive-codec.ts)
 * keeps workers in a pool between jobs (worker-pool.ts) and ends a worker to abort its job.
 * Protocol: one reply per request, in order; the codec keeps no state between jobs.
 */
/// <reference lib="deno.worker" />
import { isFormatProblem } from "./byte-io.ts";
import { type ArchiveFormat, contractFile, expandFile, type ExpandResult } from "./token-files.ts";
import type { StreamMemo } from "./stream-memo.ts";

export type ArchiveRequest =
  | { op: "expand"; format: ArchiveFormat; inPath: string; outPath: string }
  | { op: "contract"; expandedPath: string; outPath: string; memo?: StreamMemo };

export type ArchiveReply =
  | { ok: true; expand: ExpandResult }
  | { ok: true; contract: { size: number; sha256: string; copied: number } }
  | { ok: false; message: string; damaged: boolean };

self.onmessage = async (event: MessageEvent<ArchiveRequest>) => {
  const request = event.data;
  let reply: ArchiveReply;
  try {
    reply = request.op === "expand"
      ? { ok: true, expand: await expandFile(request.format, request.inPath, request.outPath) }
      : {
        ok: true,
        contract: await contractFile(request.expandedPath, request.outPath, request.memo),
      };
  } catch (err) {
    reply = {
      ok: false,
      message: err instanceof Error ? err.message : String(err),
      damaged: isFormatProblem(err),
    };
  }
  self.postMessage(reply);
};
