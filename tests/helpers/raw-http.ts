/**
 * Raw TCP clients for the connection-abuse tests: idle sockets, heads sent in part, bodies that
 * stall. What an attacker does, on loopback only.
 */
import { AwsClient } from "aws4fetch";
import { ACCESS_KEY, SECRET_KEY } from "./svc.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Opens up to `count` TCP connections (stops at the first refusal); each may send `text`. */
export async function openConnections(
  port: number,
  count: number,
  text = "",
): Promise<Deno.TcpConn[]> {
  const conns: Deno.TcpConn[] = [];
  for (let i = 0; i < count; i++) {
    try {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      if (text !== "") await conn.write(encoder.encode(text));
      conns.push(conn);
    } catch {
      break;
    }
  }
  return conns;
}

export function closeAll(conns: Deno.Conn[]): void {
  for (const conn of conns) {
    try {
      conn.close();
    } catch { /* closed by the server already */ }
  }
}

export interface RawOutcome {
  /** The response status, when a response head arrived. */
  status?: number;
  /** The response text received (head and body). */
  text: string;
  /** The server closed the connection. */
  closed: boolean;
  /** Milliseconds until the close (or until `waitMs` ran out). */
  ms: number;
}

/** Reads what the server sends until it closes the connection or `waitMs` passes. */
export async function readUntilClosed(conn: Deno.Conn, waitMs: number): Promise<RawOutcome> {
  const started = performance.now();
  const buffer = new Uint8Array(16 * 1024);
  let text = "";
  let closed = false;
  const deadline = started + waitMs;
  for (;;) {
    const left = deadline - performance.now();
    if (left <= 0) break;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const read = await Promise.race([
      conn.read(buffer).catch(() => null),
      new Promise<"timeout">((resolve) => timer = setTimeout(() => resolve("timeout"), left)),
    ]);
    clearTimeout(timer);
    if (read === "timeout") break;
    if (read === null) {
      closed = true;
      break;
    }
    text += decoder.decode(buffer.subarray(0, read));
  }
  const match = /^HTTP\/1\.1 (\d{3})/.exec(text);
  return {
    status: match ? Number(match[1]) : undefined,
    text,
    closed,
    ms: performance.now() - started,
  };
}

/**
 * The head of a signed PutObject whose body (of `length` bytes, unsigned payload) the caller
 * sends itself, or never.
 */
export async function signedPutHead(
  url: string,
  length: number,
  credentials = { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
): Promise<string> {
  const aws = new AwsClient({ ...credentials, service: "s3", region: "us-east-1" });
  const signed = await aws.sign(url, {
    method: "PUT",
    headers: { "content-length": String(length), "x-amz-content-sha256": "UNSIGNED-PAYLOAD" },
  });
  const target = new URL(url);
  const lines = [`PUT ${target.pathname} HTTP/1.1`, `host: ${target.host}`];
  for (const [name, value] of signed.headers) {
    if (name !== "host") lines.push(`${name}: ${value}`);
  }
  if (!signed.headers.has("content-length")) lines.push(`content-length: ${length}`);
  return lines.join("\r\n") + "\r\n\r\n";
}

/** A browser POST form upload's head and first field, the rest never sent. */
export function slowFormHead(port: number, bucket: string): string {
  const boundary = "----slowform";
  const start = `--${boundary}\r\ncontent-disposition: form-data; name="key"\r\n\r\nslow`;
  return [
    `POST /${bucket} HTTP/1.1`,
    `host: 127.0.0.1:${port}`,
    `content-type: multipart/form-data; boundary=${boundary}`,
    `content-length: 100000`,
    "",
    start,
  ].join("\r\n");
}
