/**
 * Verification of browser POST upload forms signed with AWS Signature Version 4 (AWS S3 API
 * reference: "Browser-Based Uploads Using POST", "Creating a POST Policy"; checked 2026).
 *
 * The signed string is the `policy` field exactly as sent (base64 of a JSON document); the key is
 * the SigV4 signing key of the `x-amz-credential` scope. The signature is checked before the
 * policy is even decoded, so strangers learn nothing about how policies are read. Then:
 * - `expiration` must be in the future;
 * - every condition must hold: `{"field": "v"}` and `["eq", "$field", "v"]` exactly,
 *   `["starts-with", "$field", "prefix"]` (an empty prefix allows anything; for Content-Type a
 *   comma-separated value is a list and every item must match), and
 *   `["content-length-range", min, max]`, which the caller enforces on the file's bytes;
 * - every form field must be named by some condition, except `policy`, `x-amz-signature`,
 *   `file` and `x-ignore-*` (the exemptions the SigV4 guide lists).
 * Field names compare case-insensitively (the AWS example form sends `X-Amz-Credential` against a
 * policy naming `x-amz-credential`); values compare exactly. `${filename}` in any field becomes
 * the uploaded file's name (text after its last `/` or `\`), before conditions are matched.
 * Repeated fields are joined with commas, as the guide says policies must expect.
 * The `bucket` condition is matched against the bucket of the request URL.
 */
import { SvcError } from "../lib/mod.ts";
import type { CredentialStore, Principal } from "../iam/mod.ts";
import { hmacHex, signaturesEqual, signingKey } from "./signing-key.ts";

export interface PostFormField {
  name: string;
  value: string;
}

export interface PostPolicyInput {
  /** The bucket of the request URL. */
  bucket: string;
  /** The text fields before the file, in order, as sent. */
  fields: readonly PostFormField[];
  /** The file part's filename (null when it had none). */
  filename: string | null;
  credentials: CredentialStore;
  /** Clock for the expiration check, in ms (tests). */
  now?: number;
}

export interface LengthRange {
  min: number;
  max: number;
}

export interface VerifiedPostForm {
  principal: Principal;
  /** Field values by lowercase name, `${filename}` expanded, repeats joined with ",". */
  values: Map<string, string>;
  /** The intersection of every content-length-range condition; null when there is none. */
  contentLength: LengthRange | null;
  expiration: number;
}

export const ALGORITHM = "AWS4-HMAC-SHA256";
const EXEMPT = new Set(["policy", "x-amz-signature", "file"]);
const REQUIRED = ["x-amz-algorithm", "x-amz-credential", "x-amz-date", "x-amz-signature"];
const AMZ_DATE = /^(\d{8})T\d{6}Z$/;
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?Z$/;

/** The name S3 substitutes for `${filename}`: what follows the last `/` or `\`. */
export function fileBasename(filename: string | null): string {
  if (filename === null) return "";
  return filename.slice(Math.max(filename.lastIndexOf("/"), filename.lastIndexOf("\\")) + 1);
}

/** Field values by lowercase name, `${filename}` expanded, repeated fields joined with ",". */
export function formValues(
  fields: readonly PostFormField[],
  filename: string | null,
): Map<string, string> {
  const name = fileBasename(filename);
  const values = new Map<string, string>();
  for (const field of fields) {
    const key = field.name.toLowerCase();
    const value = field.value.replaceAll("${filename}", name);
    const earlier = values.get(key);
    values.set(key, earlier === undefined ? value : `${earlier},${value}`);
  }
  return values;
}

/** Checks signature, expiration, conditions and coverage; throws the S3 error for the first fault. */
export function verifyPostPolicy(input: PostPolicyInput): VerifiedPostForm {
  const values = formValues(input.fields, input.filename);
  const policyText = values.get("policy");
  if (policyText === undefined) {
    throw new SvcError(
      "AccessDenied",
      "Access Denied: anonymous POST uploads are not allowed; the form must carry a signed policy",
    );
  }
  if (!values.has("x-amz-signature") && values.has("signature")) {
    throw new SvcError(
      "InvalidArgument",
      `POST policies signed with Signature Version 2 are not supported; use ${ALGORITHM}`,
      { ArgumentName: "signature" },
    );
  }
  for (const name of REQUIRED) {
    if (!values.has(name)) {
      throw new SvcError(
        "InvalidArgument",
        `Bucket POST must contain a field named '${name}'.  If it is specified, please check the order of the fields.`,
        { ArgumentName: name, ArgumentValue: "" },
      );
    }
  }
  const algorithm = values.get("x-amz-algorithm")!;
  if (algorithm !== ALGORITHM) {
    throw new SvcError("InvalidArgument", `X-Amz-Algorithm only supports "${ALGORITHM}"`, {
      ArgumentName: "x-amz-algorithm",
      ArgumentValue: algorithm,
    });
  }
  const scope = parseCredential(values.get("x-amz-credential")!);
  const amzDate = values.get("x-amz-date")!;
  if (AMZ_DATE.exec(amzDate)?.[1] !== scope.date) {
    throw new SvcError(
      "InvalidArgument",
      `X-Amz-Date "${amzDate}" must be a yyyyMMddTHHmmssZ date on the day of the credential scope (${scope.date})`,
      { ArgumentName: "x-amz-date", ArgumentValue: amzDate },
    );
  }
  const credential = input.credentials.lookup(scope.accessKeyId);
  if (credential === null) {
    throw new SvcError(
      "InvalidAccessKeyId",
      "The AWS Access Key Id you provided does not exist in our records.",
      { AWSAccessKeyId: scope.accessKeyId },
    );
  }
  const key = signingKey(credential.secretAccessKey, scope.date, scope.region, "s3");
  const given = values.get("x-amz-signature")!;
  if (!signaturesEqual(hmacHex(key, policyText), given)) {
    throw new SvcError(
      "SignatureDoesNotMatch",
      "The request signature we calculated does not match the signature you provided. Check your key and signing method.",
      { AWSAccessKeyId: scope.accessKeyId, StringToSign: policyText, SignatureProvided: given },
    );
  }

  const policy = parsePolicy(policyText);
  if (policy.expiration <= (input.now ?? Date.now())) throw denied("Policy expired.");
  const actual = new Map(values);
  actual.set("bucket", input.bucket);
  let range: LengthRange | null = null;
  const covered = new Set<string>();
  for (const condition of policy.conditions) {
    if (condition.op === "content-length-range") {
      const previous: LengthRange = range ?? { min: 0, max: Infinity };
      range = {
        min: Math.max(previous.min, condition.min),
        max: Math.min(previous.max, condition.max),
      };
      continue;
    }
    covered.add(condition.field);
    if (!matches(condition, actual.get(condition.field) ?? "")) {
      throw denied(`Policy Condition failed: ${condition.text}`);
    }
  }
  const extra = [...new Set(input.fields.map((f) => f.name))].filter((name) => {
    const lower = name.toLowerCase();
    return !covered.has(lower) && !EXEMPT.has(lower) && !lower.startsWith("x-ignore-");
  });
  if (extra.length > 0) throw denied(`Extra input fields: ${extra.join(", ")}`);
  return {
    principal: credential.principal,
    values,
    contentLength: range,
    expiration: policy.expiration,
  };
}

function denied(reason: string): SvcError {
  return new SvcError("AccessDenied", `Invalid according to Policy: ${reason}`);
}

interface Scope {
  accessKeyId: string;
  date: string;
  region: string;
}

/** `AKID/yyyyMMdd/region/s3/aws4_request`; svc accepts any region (it has one namespace). */
function parseCredential(value: string): Scope {
  const parts = value.split("/");
  const [accessKeyId, date, region, service, terminator] = parts;
  if (
    parts.length !== 5 || accessKeyId === "" || !/^\d{8}$/.test(date) || region === "" ||
    service !== "s3" || terminator !== "aws4_request"
  ) {
    throw new SvcError(
      "InvalidArgument",
      `X-Amz-Credential "${value}" is not of the form <access-key-id>/<yyyyMMdd>/<region>/s3/aws4_request`,
      { ArgumentName: "x-amz-credential", ArgumentValue: value },
    );
  }
  return { accessKeyId, date, region };
}

type Condition =
  | { op: "eq" | "starts-with"; field: string; value: string; text: string }
  | { op: "content-length-range"; min: number; max: number; text: string };

interface Policy {
  expiration: number;
  conditions: Condition[];
}

function invalid(reason: string): SvcError {
  return new SvcError("InvalidPolicyDocument", `Invalid Policy: ${reason}`);
}

/** Decodes and checks the shape of a policy document. */
export function parsePolicy(base64: string): Policy {
  let doc: unknown;
  try {
    const bytes = Uint8Array.from(atob(base64.replace(/\s+/g, "")), (c) => c.charCodeAt(0));
    doc = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw invalid("Invalid JSON.");
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) {
    throw invalid("Invalid JSON.");
  }
  const { expiration, conditions } = doc as Record<string, unknown>;
  if (expiration === undefined) throw invalid("Policy missing expiration.");
  const when = typeof expiration === "string" ? parseIsoDate(expiration) : null;
  if (when === null) throw invalid(`Invalid 'expiration' value: '${String(expiration)}'`);
  if (conditions === undefined) throw invalid("Policy missing conditions.");
  if (!Array.isArray(conditions)) throw invalid("Policy conditions must be an array.");
  return { expiration: when, conditions: conditions.flatMap(parseCondition) };
}

function parseIsoDate(value: string): number | null {
  const m = ISO_DATE.exec(value);
  if (!m) return null;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  const ms = Number((m[7] ?? "0").padEnd(3, "0").slice(0, 3));
  const time = Date.UTC(year, month - 1, day, hour, minute, second, ms);
  // Date.UTC rolls 2026-02-30 over into March; a real date survives the round trip.
  const date = new Date(time);
  return date.getUTCMonth() === month - 1 && date.getUTCDate() === day && hour < 24 &&
      minute < 60 && second < 60
    ? time
    : null;
}

function render(parts: unknown[]): string {
  return `[${parts.map((p) => JSON.stringify(p)).join(", ")}]`;
}

function parseCondition(raw: unknown): Condition[] {
  if (Array.isArray(raw)) {
    const op = typeof raw[0] === "string" ? raw[0].toLowerCase() : "";
    const text = render(raw);
    if (op === "content-length-range") {
      const [min, max] = [lengthBound(raw[1], text), lengthBound(raw[2], text)];
      if (raw.length !== 3 || min > max) {
        throw invalid(`Invalid content-length-range condition: ${text}`);
      }
      return [{ op, min, max, text }];
    }
    if (op !== "eq" && op !== "starts-with") throw invalid(`Invalid condition: ${text}`);
    const [, field, value] = raw;
    if (
      raw.length !== 3 || typeof field !== "string" || !field.startsWith("$") || field === "$" ||
      typeof value !== "string"
    ) {
      throw invalid(`Invalid ${op} condition: ${text}`);
    }
    return [{ op, field: field.slice(1).toLowerCase(), value, text }];
  }
  if (typeof raw === "object" && raw !== null) {
    const entries = Object.entries(raw);
    if (entries.length === 0) throw invalid("Invalid condition: {}");
    return entries.map(([field, value]) => {
      if (typeof value !== "string") {
        throw invalid(`Invalid Simple-Condition: value must be a string: ${JSON.stringify(raw)}`);
      }
      return {
        op: "eq",
        field: field.toLowerCase(),
        value,
        text: render(["eq", `$${field}`, value]),
      };
    });
  }
  throw invalid(`Invalid condition: ${JSON.stringify(raw)}`);
}

/** A content-length-range bound: a non-negative integer, as a JSON number or digit string. */
function lengthBound(value: unknown, text: string): number {
  const n = typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0) {
    throw invalid(`Invalid content-length-range condition: ${text}`);
  }
  return n;
}

function matches(condition: Condition & { op: "eq" | "starts-with" }, actual: string): boolean {
  if (condition.op === "eq") return actual === condition.value;
  if (condition.value === "") return true;
  // "Creating a POST Policy": a Content-Type with commas is a list; every item must match.
  if (condition.field === "content-type" && actual.includes(",")) {
    return actual.split(",").every((item) => item.trim().startsWith(condition.value));
  }
  return actual.startsWith(condition.value);
}
