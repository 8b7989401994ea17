/**
 * Uploads a browser File through the session's object I/O routes: one PUT when small, else a
 * multipart upload in 8 MiB parts, three at a time, each part its own request (so memory stays
 * at a few parts, and progress is per byte through XMLHttpRequest). Cancel aborts the requests in
 * flight and the multipart upload, so no parts are left behind.
 */
import { ADMIN, ApiError, call, failure, queryString } from "./api.ts";

export const PART_SIZE = 8 * 1024 * 1024;
const PARALLEL_PARTS = 3;

export interface UploadProgress {
  sent: number;
  total: number;
}

/** PUTs `body` with progress; resolves the JSON answer. */
function put(
  url: string,
  body: Blob,
  onProgress: (sent: number) => void,
  requests: Set<XMLHttpRequest>,
): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    requests.add(xhr);
    xhr.open("PUT", url);
    xhr.setRequestHeader("content-type", body.type || "application/octet-stream");
    xhr.upload.onprogress = (e) => onProgress(e.loaded);
    xhr.onload = async () => {
      requests.delete(xhr);
      if (xhr.status >= 200 && xhr.status < 300) {
        resolve(JSON.parse(xhr.responseText || "{}"));
      } else {
        const response = new Response(xhr.responseText, {
          status: xhr.status,
          headers: { "content-type": "application/json" },
        });
        reject(await failure(response));
      }
    };
    xhr.onerror = () => {
      requests.delete(xhr);
      reject(new ApiError(0, "network", "The upload lost its connection to svc"));
    };
    xhr.onabort = () => {
      requests.delete(xhr);
      reject(new ApiError(0, "cancelled", "Upload cancelled"));
    };
    xhr.send(body);
  });
}

export class Upload {
  #requests = new Set<XMLHttpRequest>();
  #cancelled = false;
  #uploadId: string | null = null;

  constructor(
    readonly file: File,
    readonly bucket: string,
    readonly key: string,
    private readonly onProgress: (p: UploadProgress) => void,
  ) {}

  get multipart(): boolean {
    return this.file.size > PART_SIZE;
  }

  async start(): Promise<void> {
    const target = { bucket: this.bucket, key: this.key };
    if (!this.multipart) {
      await put(
        `${ADMIN}/objects/upload${queryString(target)}`,
        this.file,
        (sent) => this.onProgress({ sent, total: this.file.size }),
        this.#requests,
      );
      this.onProgress({ sent: this.file.size, total: this.file.size });
      return;
    }
    const created = await call<{ upload_id: string }>("objects/multipart/create", {
      method: "POST",
      query: { ...target, content_type: this.file.type || undefined },
    });
    this.#uploadId = created.upload_id;
    if (this.#cancelled) {
      // Cancelled while the upload was being created: nothing sent yet, but it did not finish.
      await this.#abort();
      throw new ApiError(0, "cancelled", "Upload cancelled");
    }
    const count = Math.ceil(this.file.size / PART_SIZE);
    const sent = new Array(count).fill(0);
    const etags: string[] = new Array(count);
    let next = 0;
    const report = () =>
      this.onProgress({ sent: sent.reduce((a, b) => a + b, 0), total: this.file.size });
    const worker = async () => {
      while (next < count && !this.#cancelled) {
        const index = next++;
        const blob = this.file.slice(
          index * PART_SIZE,
          Math.min((index + 1) * PART_SIZE, this.file.size),
        );
        const query = queryString({
          ...target,
          upload_id: this.#uploadId!,
          part_number: index + 1,
        });
        const answer = await put(`${ADMIN}/objects/multipart/part${query}`, blob, (n) => {
          sent[index] = n;
          report();
        }, this.#requests);
        sent[index] = blob.size;
        etags[index] = answer.etag;
        report();
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(PARALLEL_PARTS, count) }, worker));
      if (this.#cancelled) throw new ApiError(0, "cancelled", "Upload cancelled");
      await call("objects/multipart/complete", {
        query: { ...target, upload_id: this.#uploadId },
        body: { parts: etags.map((etag, i) => ({ part_number: i + 1, etag })) },
      });
    } catch (err) {
      await this.#abort();
      throw err;
    }
  }

  cancel(): void {
    this.#cancelled = true;
    for (const xhr of this.#requests) xhr.abort();
  }

  async #abort(): Promise<void> {
    if (!this.#uploadId) return;
    const uploadId = this.#uploadId;
    this.#uploadId = null;
    try {
      await call("objects/multipart/abort", {
        method: "POST",
        query: { bucket: this.bucket, key: this.key, upload_id: uploadId },
      });
    } catch { /* the sweeper reclaims an upload that could not be aborted */ }
  }
}
