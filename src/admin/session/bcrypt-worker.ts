/**
 * Worker thread for bcrypt (see password-hasher.ts). Protocol: `{id, op: "compare", plain, hash}`
 * answers `{id, result: boolean}`; `{id, op: "hash", plain, cost}` answers `{id, result: string}`;
 * a failure answers `{id, error: message}`.
 */
/// <reference lib="deno.worker" />
import bcrypt from "bcryptjs";

export type BcryptRequest =
  | { id: number; op: "compare"; plain: string; hash: string }
  | { id: number; op: "hash"; plain: string; cost: number };

export type BcryptReply =
  | { id: number; result: boolean | string; error?: undefined }
  | { id: number; error: string };

self.onmessage = (event: MessageEvent<BcryptRequest>) => {
  const request = event.data;
  try {
    const result = request.op === "compare"
      ? bcrypt.compareSync(request.plain, request.hash)
      : bcrypt.hashSync(request.plain, request.cost);
    self.postMessage({ id: request.id, result } satisfies BcryptReply);
  } catch (err) {
    self.postMessage({ id: request.id, error: (err as Error).message } satisfies BcryptReply);
  }
};
