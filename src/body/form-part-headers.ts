/**
 * The header syntax of multipart/form-data: the boundary in the request's Content-Type, and each
 * part's Content-Disposition (name, filename) and Content-Type. Faults are S3's
 * MalformedPOSTRequest, with the detail as the cause.
 */
import { SvcError } from "../lib/mod.ts";

/** What a part's headers say about it. */
export interface PartHeading {
  name: string;
  /** From Content-Disposition; null when the part had none (a text area upload). */
  filename: string | null;
  /** The part's own Content-Type header. */
  contentType: string | null;
}

const MALFORMED = "The body of your POST request is not well-formed multipart/form-data.";

/** S3's MalformedPOSTRequest, with the detail as the cause. */
export function malformedForm(detail: string): SvcError {
  return new SvcError("MalformedPOSTRequest", MALFORMED, {}, { cause: new Error(detail) });
}

// RFC 2046 bchars: a boundary is 1-70 of these and does not end with a space.
const BOUNDARY_CHARS = /^[0-9A-Za-z'()+_,\-./:=? ]{0,69}[0-9A-Za-z'()+_,\-./:=?]$/;

/** The boundary of a `multipart/form-data` Content-Type; throws unless there is a valid one. */
export function formBoundary(contentType: string | null): string {
  const [type, ...params] = splitParams(contentType ?? "");
  if (type.trim().toLowerCase() !== "multipart/form-data") {
    throw malformedForm(`Content-Type is "${contentType}", not multipart/form-data`);
  }
  const boundary = params.find((p) => p.name === "boundary")?.value;
  if (boundary === undefined || !BOUNDARY_CHARS.test(boundary)) {
    throw malformedForm(`missing or invalid boundary in "${contentType}"`);
  }
  return boundary;
}

// `; name=value` or `; name="quoted"`; in a quoted value a backslash escapes only a quote, so
// Windows paths sent as filenames keep their backslashes (S3 takes the text after the last one).
const PARAM = /;\s*([^\s=;]+)\s*=\s*(?:"((?:\\"|[^"])*)"|([^";]*))/g;

/** Splits `type; a=b; c="d"` into the leading value and its parameters (names lowercased). */
function splitParams(header: string): [string, ...{ name: string; value: string }[]] {
  const semi = header.indexOf(";");
  const head = semi < 0 ? header : header.slice(0, semi);
  const params = [...header.slice(head.length).matchAll(PARAM)].map((m) => ({
    name: m[1].toLowerCase(),
    value: m[2] !== undefined ? m[2].replaceAll('\\"', '"') : m[3].trim(),
  }));
  return [head, ...params];
}

/** Name, filename and type of a part from its header block. */
export function partOf(headerBlock: string): PartHeading {
  let disposition: string | null = null;
  let contentType: string | null = null;
  for (const line of headerBlock === "" ? [] : headerBlock.split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon <= 0) throw malformedForm(`bad part header line "${line}"`);
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === "content-disposition") disposition = value;
    else if (name === "content-type") contentType = value;
  }
  if (disposition === null) throw malformedForm("a part has no Content-Disposition header");
  const [type, ...params] = splitParams(disposition);
  const name = params.find((p) => p.name === "name")?.value;
  if (type.trim().toLowerCase() !== "form-data" || name === undefined) {
    throw malformedForm(`a part's Content-Disposition is "${disposition}"`);
  }
  const filename = params.find((p) => p.name === "filename")?.value ?? null;
  return { name, filename, contentType };
}
