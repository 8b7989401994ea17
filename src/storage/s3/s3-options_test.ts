import assert from "node:assert/strict";
import { validateConfig } from "../../config/schema/schema.ts";
import { s3OptionsFromConfig } from "./s3-options.ts";

const advanced = validateConfig({}).advanced;

Deno.test("options come from the backend block and the advanced section", () => {
  const options = s3OptionsFromConfig(
    {
      endpoint: "http://minio:9000/",
      region: "eu-west-1",
      force_path_style: false,
      access_key_id: "AK",
      secret_access_key: "SK",
    },
    { ...advanced, s3_connect_timeout_secs: 2, upload_concurrency: 8 },
    "/spool",
    () => "from-env",
  );
  assert.equal(options.endpoint, "http://minio:9000");
  assert.equal(options.forcePathStyle, false);
  assert.equal(options.accessKeyId, "AK");
  assert.equal(options.connectTimeoutMs, 2000);
  assert.equal(options.readTimeoutMs, advanced.s3_read_timeout_secs * 1000);
  assert.equal(options.partSize, advanced.multipart_part_size);
  assert.equal(options.uploadConcurrency, 8);
  assert.equal(options.spoolDir, "/spool");
});

Deno.test("credentials fall back to SVC_BE_AWS_*, and their absence is refused", () => {
  const env: Record<string, string> = {
    SVC_BE_AWS_ACCESS_KEY_ID: "ENVAK",
    SVC_BE_AWS_SECRET_ACCESS_KEY: "ENVSK",
  };
  const options = s3OptionsFromConfig({ endpoint: "http://s3" }, advanced, "/s", (n) => env[n]);
  assert.equal(options.accessKeyId, "ENVAK");
  assert.equal(options.secretAccessKey, "ENVSK");
  assert.equal(options.region, "us-east-1");
  assert.equal(options.forcePathStyle, true);
  assert.throws(
    () => s3OptionsFromConfig({ endpoint: "http://s3" }, advanced, "/s", () => undefined),
    /S3 backend "http:\/\/s3" has no credentials/,
  );
  assert.throws(() => s3OptionsFromConfig({}, advanced, "/s"), /no endpoint/);
});
