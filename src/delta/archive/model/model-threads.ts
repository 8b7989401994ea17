/**
 * Runs the deflate model's jobs (a chunk to predict or rebuild, model-chunks.ts; a whole small
 * stream to predict, model-pick.ts) on this thread and on helper workers, one per further core,
 * so one archive's prediction, exact-rebuild check and cold read use every core. Helpers start
 * at the first batch of more than one job, stay for later ones and end after IDLE_MS without
 * work (or with the thread that started them: a cut-off archive worker takes its helpers along).
 * A job's result does not depend on the thread that runs it.
 */
import { formatProblem } from "../byte-io.ts";
import {
  type ChunkTokens,
  type Correction,
  predictChunk,
  type PredictTask,
  rebuildChunk,
  type RebuildTask,
} from "./model-chunks.ts";
import { type ModelPick, predictStream, type StreamTask } from "./model-pick.ts";

export type ModelJob =
  | { predict: PredictTask }
  | { rebuild: RebuildTask }
  | { stream: StreamTask };

export type ModelResult =
  | { fixes: Correction[] | null }
  | { tokens: ChunkTokens }
  | { picked: Required<ModelPick> | null };

export type ModelRequest = ModelJob & { id: number };
export type ModelReply =
  | (ModelResult & { id: number })
  | { id: number; error: string; damaged: boolean };

/** Helpers are ended after this long without a job (the archive pool keeps its workers as long). */
const IDLE_MS = 30_000;
/** At most this many helpers, whatever the core count. */
const MAX_HELPERS = 7;

interface Waiter {
  resolve: (reply: ModelReply) => void;
  reject: (err: unknown) => void;
}

const helpers: Worker[] = [];
const waiting = new Map<number, Waiter>();
let nextId = 0;
let idleTimer: ReturnType<typeof setTimeout> | undefined;

function helperCount(): number {
  const cores = navigator.hardwareConcurrency ?? 1;
  return Math.max(0, Math.min(cores - 1, MAX_HELPERS));
}

function failAll(err: unknown): void {
  for (const waiter of waiting.values()) waiter.reject(err);
  waiting.clear();
  stopModelThreads();
}

function startHelpers(): void {
  while (helpers.length < helperCount()) {
    const worker = new Worker(new URL("./model-worker.ts", import.meta.url).href, {
      type: "module",
    });
    worker.onmessage = (event: MessageEvent<ModelReply>) => {
      const waiter = waiting.get(event.data.id);
      waiting.delete(event.data.id);
      waiter?.resolve(event.data);
    };
    worker.onerror = (event) => {
      event.preventDefault();
      failAll(new Error(`Deflate model helper failed: ${event.message}`));
    };
    helpers.push(worker);
  }
}

/** Ends the helper workers (they start again when needed). */
export function stopModelThreads(): void {
  if (idleTimer !== undefined) clearTimeout(idleTimer);
  idleTimer = undefined;
  for (const worker of helpers.splice(0)) worker.terminate();
}

function armIdle(): void {
  if (idleTimer !== undefined) clearTimeout(idleTimer);
  const timer = setTimeout(() => waiting.size === 0 && stopModelThreads(), IDLE_MS);
  Deno.unrefTimer(timer);
  idleTimer = timer;
}

/** Runs one job on this thread. */
export function runJob(job: ModelJob): ModelResult {
  if ("predict" in job) return { fixes: predictChunk(job.predict) };
  if ("rebuild" in job) return { tokens: rebuildChunk(job.rebuild) };
  return { picked: predictStream(job.stream) };
}

/** The content a job's model reads (its cost, and what a helper is sent). */
function sizeOf(job: ModelJob): number {
  if ("stream" in job) return job.stream.content.length;
  return "predict" in job ? job.predict.window.length : job.rebuild.window.length;
}

/** A copy of a job whose arrays own their buffers (a view would post its whole buffer). */
function detached(job: ModelJob): [ModelJob, ArrayBuffer[]] {
  const transfer: ArrayBuffer[] = [];
  const own = <T extends Uint8Array | Uint16Array>(array: T): T => {
    const copy = array.slice() as T;
    transfer.push(copy.buffer as ArrayBuffer);
    return copy;
  };
  if ("rebuild" in job) {
    return [{ rebuild: { ...job.rebuild, window: own(job.rebuild.window) } }, transfer];
  }
  if ("predict" in job) {
    const t = job.predict;
    const copy = {
      ...t,
      window: own(t.window),
      lengths: own(t.lengths),
      distances: own(t.distances),
    };
    return [{ predict: copy }, transfer];
  }
  const t = job.stream;
  const count = t.tokenCount;
  const copy = {
    ...t,
    content: own(t.content),
    lengths: own(t.lengths.subarray(0, count)),
    distances: own(t.distances.subarray(0, count)),
  };
  return [{ stream: copy }, transfer];
}

function send(worker: Worker, job: ModelJob): Promise<ModelReply> {
  const { promise, resolve, reject } = Promise.withResolvers<ModelReply>();
  const id = nextId++;
  const [copy, transfer] = detached(job);
  waiting.set(id, { resolve, reject });
  worker.postMessage({ ...copy, id } as ModelRequest, transfer);
  return promise;
}

function unwrap(reply: ModelReply): ModelResult {
  if (!("error" in reply)) return reply;
  throw reply.damaged ? formatProblem(reply.error) : new Error(reply.error);
}

/**
 * Runs every job and answers their results in order. Jobs go to threads largest first, each to
 * the least loaded (by content), this thread taking its share while the helpers run theirs.
 */
export async function runJobs(jobs: ModelJob[]): Promise<ModelResult[]> {
  if (jobs.length > 1 && helperCount() > 0) startHelpers();
  const threads = jobs.length > 1 ? helpers.length + 1 : 1;
  const load = new Array<number>(threads).fill(0);
  const thread = new Array<number>(jobs.length);
  const order = jobs.map((_, i) => i).sort((a, b) => sizeOf(jobs[b]) - sizeOf(jobs[a]));
  for (const i of order) {
    const least = load.indexOf(Math.min(...load));
    thread[i] = least;
    load[least] += sizeOf(jobs[i]);
  }
  const remote: Promise<ModelReply>[] = [];
  jobs.forEach((job, i) => {
    if (thread[i] === 0) return;
    remote[i] = send(helpers[thread[i] - 1], job);
    // Awaited below; when this thread's share fails first, a helper's failure is not unhandled.
    remote[i].catch(() => {});
  });
  const results: ModelResult[] = [];
  try {
    jobs.forEach((job, i) => {
      if (thread[i] === 0) results[i] = runJob(job);
    });
  } finally {
    if (threads > 1) armIdle();
  }
  for (let i = 0; i < jobs.length; i++) {
    if (thread[i] !== 0) results[i] = unwrap(await remote[i]);
  }
  return results;
}
