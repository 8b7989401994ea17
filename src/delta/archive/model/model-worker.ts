/**
 * A helper thread of model-threads.ts: runs one deflate model job at a time. A worker ended from
 * outside (an aborted archive job ends its archive worker) ends its helpers too; one in the
 * middle of a job ends once that job's synchronous run returns (measured with Deno 2.9).
 */
/// <reference lib="deno.worker" />
import { isFormatProblem } from "../byte-io.ts";
import { type ModelReply, type ModelRequest, runJob } from "./model-threads.ts";

self.onmessage = (event: MessageEvent<ModelRequest>) => {
  const { id, ...job } = event.data;
  let reply: ModelReply;
  const transfer: ArrayBuffer[] = [];
  try {
    const result = runJob(job);
    if ("tokens" in result) {
      transfer.push(
        result.tokens.lengths.buffer as ArrayBuffer,
        result.tokens.distances.buffer as ArrayBuffer,
      );
    }
    reply = { ...result, id };
  } catch (err) {
    reply = {
      id,
      error: err instanceof Error ? err.message : String(err),
      damaged: isFormatProblem(err),
    };
  }
  self.postMessage(reply, transfer);
};
