/**
 * Reading the XML documents an S3-compatible backend answers with (ListBuckets, ListObjectsV2,
 * error documents, multipart responses) and writing the one it needs to send
 * (CompleteMultipartUpload).
 *
 * A small tolerant reader rather than the strict parser of the S3 surface (src/s3/xml.ts): the
 * storage layer must not import the layer above it, and here the documents come from a server we
 * chose to trust, so the job is extracting elements, not policing clients. It never expands
 * anything but the predefined entities and character references, and ignores DOCTYPE,
 * comments and processing instructions.
 */

export interface XmlNode {
  name: string;
  children: XmlNode[];
  text: string;
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

/** Replaces the predefined entities and numeric character references. */
export function decodeXmlText(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (whole, ref: string) => {
    if (ref[0] !== "#") return ENTITIES[ref] ?? whole;
    const code = ref[1] === "x" ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
    return code <= 0x10ffff ? String.fromCodePoint(code) : whole;
  });
}

export function escapeXmlText(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => `&${Object.keys(ENTITIES).find((n) => ENTITIES[n] === c)};`,
  );
}

/** Parses a document into its root element; throws when the markup does not nest. */
export function parseXmlDocument(xml: string): XmlNode {
  const root: XmlNode = { name: "#document", children: [], text: "" };
  const stack: XmlNode[] = [root];
  const tag =
    /<(\/?)([^\s/>!?]+)[^>]*?(\/?)>|<!\[CDATA\[([\s\S]*?)\]\]>|<!--[\s\S]*?-->|<![^>]*>|<\?[\s\S]*?\?>/g;
  let last = 0;
  for (let match = tag.exec(xml); match; match = tag.exec(xml)) {
    const top = stack[stack.length - 1];
    top.text += decodeXmlText(xml.slice(last, match.index));
    last = tag.lastIndex;
    const [, closing, name, selfClosing, cdata] = match;
    if (cdata !== undefined) {
      top.text += cdata;
    } else if (name === undefined) {
      continue; // comment, DOCTYPE or processing instruction
    } else if (closing) {
      if (top.name !== name || stack.length === 1) {
        throw new Error(`Backend XML closes "${name}" while "${top.name}" is open`);
      }
      stack.pop();
    } else {
      const node: XmlNode = { name, children: [], text: "" };
      top.children.push(node);
      if (!selfClosing) stack.push(node);
    }
  }
  if (stack.length !== 1 || root.children.length !== 1) {
    throw new Error(`Backend XML is incomplete: ${JSON.stringify(xml.slice(0, 200))}`);
  }
  return root.children[0];
}

export function children(node: XmlNode, name: string): XmlNode[] {
  return node.children.filter((c) => c.name === name);
}

export function childText(node: XmlNode, name: string): string | undefined {
  return node.children.find((c) => c.name === name)?.text;
}

// ---- the documents ---------------------------------------------------------------------------

export interface S3ErrorDocument {
  code: string;
  message: string;
}

/** The Code and Message of an `<Error>` document; null for anything else (or no XML at all). */
export function parseErrorDocument(xml: string): S3ErrorDocument | null {
  if (!xml.includes("<Error")) return null;
  try {
    const root = parseXmlDocument(xml);
    if (root.name !== "Error") return null;
    return { code: childText(root, "Code") ?? "", message: childText(root, "Message") ?? "" };
  } catch {
    return null;
  }
}

export interface ListedBucket {
  name: string;
  created: Date;
}

export function parseListBuckets(
  xml: string,
): { buckets: ListedBucket[]; continuationToken?: string } {
  const root = parseXmlDocument(xml);
  const list = root.children.find((c) => c.name === "Buckets");
  const buckets = (list ? children(list, "Bucket") : []).map((bucket) => ({
    name: childText(bucket, "Name") ?? "",
    created: new Date(childText(bucket, "CreationDate") ?? 0),
  }));
  return { buckets, continuationToken: childText(root, "ContinuationToken") || undefined };
}

export interface ListedObject {
  key: string;
  size: number;
  /** Without quotes. */
  etag: string;
  lastModified: number;
}

export interface ListedPage {
  objects: ListedObject[];
  commonPrefixes: string[];
  isTruncated: boolean;
}

/**
 * A ListObjectsV2 page. With `EncodingType` url in the answer, keys and prefixes arrive
 * percent-encoded (so control characters survive XML); a server that ignored the request sends
 * them raw, and they are then taken as they are.
 */
export function parseListObjects(xml: string): ListedPage {
  const root = parseXmlDocument(xml);
  const urlEncoded = childText(root, "EncodingType") === "url";
  const name = (raw: string) => urlEncoded ? decodeURIComponent(raw.replace(/\+/g, " ")) : raw;
  return {
    objects: children(root, "Contents").map((entry) => ({
      key: name(childText(entry, "Key") ?? ""),
      size: Number(childText(entry, "Size") ?? 0),
      etag: unquoteEtag(childText(entry, "ETag") ?? ""),
      lastModified: Date.parse(childText(entry, "LastModified") ?? "") || 0,
    })),
    commonPrefixes: children(root, "CommonPrefixes").map((p) => name(childText(p, "Prefix") ?? "")),
    isTruncated: childText(root, "IsTruncated") === "true",
  };
}

export function parseInitiateMultipart(xml: string): string {
  const uploadId = childText(parseXmlDocument(xml), "UploadId");
  if (!uploadId) throw new Error(`Backend did not return an UploadId: ${xml.slice(0, 200)}`);
  return uploadId;
}

/** The CompleteMultipartUpload body for parts 1..n. */
export function completeMultipartXml(etags: string[]): string {
  const parts = etags.map((etag, i) =>
    `<Part><PartNumber>${i + 1}</PartNumber><ETag>"${escapeXmlText(etag)}"</ETag></Part>`
  );
  return `<?xml version="1.0" encoding="UTF-8"?><CompleteMultipartUpload>${
    parts.join("")
  }</CompleteMultipartUpload>`;
}

/** `"abc"` → `abc`; also drops a weak marker some servers add. */
export function unquoteEtag(etag: string): string {
  return etag.replace(/^W\//, "").replace(/^"(.*)"$/, "$1");
}
