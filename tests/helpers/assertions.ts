/** Assertions shared by the black-box tests: S3 error documents and SDK errors. */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";

export const md5Hex = (data: Uint8Array | string) => createHash("md5").update(data).digest("hex");

/** The `<Code>` of an S3 error document. */
export function codeOf(xml: string): string | undefined {
  return /<Code>([^<]*)<\/Code>/.exec(xml)?.[1];
}

/** Asserts a raw response is the S3 error `code` with `status`. */
export async function assertError(
  res: Response | Promise<Response>,
  status: number,
  code: string,
): Promise<void> {
  const response = await res;
  const text = await response.text();
  assert.equal(response.status, status, text);
  assert.equal(codeOf(text), code, text);
}

/** Asserts an SDK call fails with the HTTP status and error name. */
export async function assertSdkError(work: Promise<unknown>, status: number, name: string) {
  await assert.rejects(work, (err: { name?: string; $metadata?: { httpStatusCode?: number } }) => {
    assert.equal(err.$metadata?.httpStatusCode, status, String(err));
    assert.equal(err.name, name);
    return true;
  });
}
