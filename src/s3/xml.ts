/**
 * XML for the S3 surface: a builder for response documents and a strict parser for the small
 * request bodies S3 accepts (DeleteObjects, CompleteMultipartUpload, CreateBucketConfiguration…).
 *
 * Characters XML 1.0 cannot carry: S3 keys may hold C0 controls, which XML 1.0 forbids even as
 * references. The builder writes them as `&#xN;`, as AWS S3 does, so lenient parsers (the AWS
 * SDKs') get the exact key back; strict parsers fail on S3 too, and use `encoding-type=url`.
 * Option `forbidden: "replace"` writes U+FFFD instead: well-formed, but the keys reported then do
 * not exist and can collide. CR, LF, TAB, NEL and LS are always references, so end-of-line and
 * attribute normalization cannot change a key. NUL and unpaired surrogates become U+FFFD.
 *
 * The parser mirrors that: C0 controls (U+0001-U+001F) are accepted raw or as references, since
 * @aws-sdk/xml-builder sends them unescaped in DeleteObjects keys; NUL, U+FFFE/U+FFFF and unpaired
 * surrogates are refused. DOCTYPE (so any ENTITY declaration) is refused outright: no entity
 * expansion, no external fetches. Text is never trimmed (S3 keys may start or end with spaces);
 * callers decide. Every fault is `MalformedXML`, the detail in `cause`.
 */

import { SvcError } from "../lib/mod.ts";

export const S3_XMLNS = "http://s3.amazonaws.com/doc/2006-03-01/";
export const XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>';
/** Largest body parseXml accepts unless told otherwise (callers read at most this much). */
export const XML_MAX_LENGTH = 2 * 1024 * 1024;
const MAX_DEPTH = 32;

/** A value to render: text, a nested element, repeated elements, or nothing (skipped). */
export type XmlScalar = string | number | bigint | boolean | Date;
export type XmlValue = XmlScalar | XmlChildren | readonly XmlValue[] | null | undefined;

/**
 * Child elements by name, in insertion order; the key "@" holds the element's attributes. Values
 * are typed `unknown` so callers can pass records they built; anything that is not an XmlValue
 * (a function, a Map, a class instance) is a TypeError at render time.
 */
export interface XmlChildren {
  readonly [name: string]: unknown;
}

export interface XmlOptions {
  /** true: S3's namespace on the root; a string: that namespace. */
  xmlns?: boolean | string;
  /** What to do with characters XML 1.0 forbids (see the file header). Default "charref". */
  forbidden?: "charref" | "replace";
}

/** The five predefined entities, by name; escaping uses the same table the other way round. */
const NAMED_ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };
const ESCAPES = Object.fromEntries(Object.entries(NAMED_ENTITIES).map(([n, c]) => [c, `&${n};`]));
// deno-lint-ignore no-control-regex
const ESCAPE_RE = /[&<>"'\x00-\x1f\x85\u2028\uFFFE\uFFFF]|\p{Cs}/gu;
const NAME_START =
  "A-Za-z_:\\u00C0-\\u00D6\\u00D8-\\u00F6\\u00F8-\\u02FF\\u0370-\\u037D\\u037F-\\u1FFF\\u200C\\u200D\\u2070-\\u218F\\u2C00-\\u2FEF\\u3001-\\uD7FF\\uF900-\\uFDCF\\uFDF0-\\uFFFD\\u{10000}-\\u{EFFFF}";
/** XML 1.0 Name, sticky: match at lastIndex only. */
const NAME_RE = new RegExp(
  `[${NAME_START}][-.0-9\\u00B7\\u0300-\\u036F\\u203F\\u2040${NAME_START}]*`,
  "uy",
);

/** Escapes text for element content or a double- or single-quoted attribute value. */
export function xmlEscape(text: string, forbidden: XmlOptions["forbidden"] = "charref"): string {
  return text.replace(ESCAPE_RE, (ch) => {
    const named = ESCAPES[ch];
    if (named) return named;
    const code = ch.charCodeAt(0);
    if (code >= 0xD800 && code <= 0xDFFF) return "\uFFFD";
    const legal = code === 0x9 || code === 0xA || code === 0xD || code === 0x85 || code === 0x2028;
    if (!legal && (forbidden === "replace" || code === 0)) return "\uFFFD";
    return `&#x${code.toString(16).toUpperCase()};`;
  });
}

function matchName(text: string, at: number): string | undefined {
  NAME_RE.lastIndex = at;
  return NAME_RE.exec(text)?.[0];
}

function checkName(name: string): string {
  if (matchName(name, 0) !== name) throw new TypeError(`not an XML name: ${JSON.stringify(name)}`);
  return name;
}

function renderText(value: XmlValue, options: XmlOptions): string | undefined {
  switch (typeof value) {
    case "string":
      return xmlEscape(value, options.forbidden);
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`cannot render ${value} in XML`);
      return String(value);
    case "bigint":
    case "boolean":
      return String(value);
  }
  if (value instanceof Date) return value.toISOString();
  return undefined;
}

function renderElement(
  name: string,
  value: XmlValue,
  options: XmlOptions,
  out: string[],
  extraAttributes: Record<string, string> = {},
): void {
  if (value === undefined || value === null) return;
  if (typeof value === "object" && !Array.isArray(value) && !(value instanceof Date)) {
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) {
      throw new TypeError(`cannot render a ${prototype?.constructor?.name} in XML (${name})`);
    }
  }
  if (Array.isArray(value)) {
    for (const item of value) {
      if (Array.isArray(item)) throw new TypeError(`nested array under ${name}`);
      renderElement(name, item, options, out);
    }
    return;
  }
  const text = renderText(value, options);
  if (text === undefined && typeof value !== "object") {
    throw new TypeError(`cannot render a ${typeof value} in XML (${name})`);
  }
  const children = text === undefined ? value as XmlChildren : {};
  const attributes = { ...extraAttributes, ...(children["@"] as Record<string, string>) };
  out.push(`<${checkName(name)}`);
  for (const [attribute, attributeValue] of Object.entries(attributes)) {
    out.push(` ${checkName(attribute)}="${xmlEscape(String(attributeValue), options.forbidden)}"`);
  }
  out.push(">");
  if (text !== undefined) out.push(text);
  for (const [childName, childValue] of Object.entries(children)) {
    if (childName !== "@") renderElement(childName, childValue as XmlValue, options, out);
  }
  out.push(`</${name}>`);
}

/**
 * Renders a whole S3 response document: the declaration, then `<rootName>` holding `content`:
 * children by name, or text for documents like GetBucketLocation's.
 */
export function xmlDocument(rootName: string, content: XmlValue, options: XmlOptions = {}): string {
  if (Array.isArray(content)) throw new TypeError("a document has exactly one root element");
  const xmlns = options.xmlns === true ? S3_XMLNS : options.xmlns || undefined;
  const out = [XML_DECLARATION];
  renderElement(rootName, content ?? "", options, out, xmlns ? { xmlns } : {});
  return out.join("");
}

// Parser

export interface XmlElement {
  /** Local name: a namespace prefix is stripped. */
  name: string;
  /** Attributes by local name, xmlns declarations left out. */
  attributes: Record<string, string>;
  children: XmlElement[];
  /** All character data directly inside (text and CDATA), untrimmed. */
  text: string;
}

export const MALFORMED_XML_MESSAGE =
  "The XML you provided was not well-formed or did not validate against our published schema";

/** The error for any XML body the S3 surface refuses; `detail` goes to the cause for logs. */
export function malformedXml(detail: string): SvcError {
  return new SvcError("MalformedXML", MALFORMED_XML_MESSAGE, {}, { cause: new Error(detail) });
}

// deno-lint-ignore no-control-regex
const ILLEGAL_CHAR = /[\x00\uFFFE\uFFFF]|\p{Cs}/u;
const UTF8 = new TextDecoder("utf-8", { fatal: true });
const SPACE = /[ \t\r\n]/;
const OPTIONAL_SPACE = /[ \t\r\n]*/y;
const END_TAG_CLOSE = /[ \t\r\n]*>/y;
const ATTRIBUTE_EQ = /[ \t\r\n]*=[ \t\r\n]*(["'])/y;

/** Parses UTF-8 bytes (a leading BOM allowed); invalid UTF-8 is MalformedXML. */
export function parseXmlBytes(bytes: Uint8Array, maxLength = XML_MAX_LENGTH): XmlElement {
  if (bytes.length > maxLength) throw malformedXml("body too large");
  try {
    return parseXml(UTF8.decode(bytes), maxLength);
  } catch (err) {
    throw err instanceof SvcError ? err : malformedXml("body is not valid UTF-8");
  }
}

/** Parses one XML document into its root element, or throws MalformedXML. */
export function parseXml(text: string, maxLength = XML_MAX_LENGTH): XmlElement {
  if (text.length > maxLength) throw malformedXml("body too large");
  if (ILLEGAL_CHAR.test(text)) throw malformedXml("character not allowed in XML");
  return new XmlParser(text.startsWith("\uFEFF") ? text.slice(1) : text).document();
}

class XmlParser {
  #pos = 0;
  constructor(readonly src: string) {}

  document(): XmlElement {
    if (/^<\?xml[ \t\r\n]/.test(this.src)) this.#declaration();
    this.#misc();
    if (!this.src.startsWith("<", this.#pos)) throw malformedXml("no root element");
    const root = this.#rootElement();
    this.#misc();
    if (this.#pos < this.src.length) throw malformedXml("content after the root element");
    return root;
  }

  #declaration(): void {
    const end = this.src.indexOf("?>");
    if (end < 0) throw malformedXml("unterminated XML declaration");
    const body = this.src.slice(5, end);
    const ok =
      /^[ \t\r\n]+version[ \t\r\n]*=[ \t\r\n]*(["'])1\.[0-9]+\1(?:[ \t\r\n]+encoding[ \t\r\n]*=[ \t\r\n]*(["'])[A-Za-z][\w.-]*\2)?(?:[ \t\r\n]+standalone[ \t\r\n]*=[ \t\r\n]*(["'])(?:yes|no)\3)?[ \t\r\n]*$/
        .test(body);
    if (!ok) throw malformedXml("malformed XML declaration");
    this.#pos = end + 2;
  }

  /** Skips whitespace, comments and processing instructions outside the root. */
  #misc(): void {
    for (;;) {
      while (this.#pos < this.src.length && SPACE.test(this.src[this.#pos])) this.#pos++;
      if (this.src.startsWith("<!--", this.#pos)) this.#comment();
      else if (this.src.startsWith("<?", this.#pos)) this.#instruction();
      else if (this.src.startsWith("<!", this.#pos)) throw malformedXml("DOCTYPE is not allowed");
      else return;
    }
  }

  #comment(): void {
    const end = this.src.indexOf("--", this.#pos + 4);
    if (end < 0 || this.src[end + 2] !== ">") throw malformedXml("malformed comment");
    this.#pos = end + 3;
  }

  #instruction(): void {
    const target = this.#name(this.#pos + 2);
    if (target.toLowerCase() === "xml") throw malformedXml("misplaced XML declaration");
    const end = this.src.indexOf("?>", this.#pos);
    if (end < 0) throw malformedXml("unterminated processing instruction");
    this.#pos = end + 2;
  }

  /** Reads a name at `at` (does not move #pos). */
  #name(at: number): string {
    const name = matchName(this.src, at);
    if (name === undefined) throw malformedXml("expected a name");
    return name;
  }

  /** Matches a sticky regex at #pos and moves past it. */
  #match(re: RegExp): RegExpExecArray | null {
    re.lastIndex = this.#pos;
    const match = re.exec(this.src);
    if (match) this.#pos += match[0].length;
    return match;
  }

  /** Parses the root element and everything in it, iteratively (no recursion limit issues). */
  #rootElement(): XmlElement {
    const stack: { element: XmlElement; qname: string; text: string[] }[] = [];
    let root: XmlElement | undefined;
    for (;;) {
      const top = stack[stack.length - 1];
      if (top && !this.src.startsWith("<", this.#pos)) {
        const lt = this.src.indexOf("<", this.#pos);
        if (lt < 0) throw malformedXml(`unclosed element ${top.qname}`);
        const raw = this.src.slice(this.#pos, lt);
        if (raw.includes("]]>")) throw malformedXml("']]>' in text");
        top.text.push(decodeText(raw));
        this.#pos = lt;
        continue;
      }
      if (!top && root) return root;
      if (this.src.startsWith("</", this.#pos)) {
        if (!top) throw malformedXml("end tag without start tag");
        const qname = this.#name(this.#pos + 2);
        this.#pos += 2 + qname.length;
        if (qname !== top.qname || !this.#match(END_TAG_CLOSE)) {
          throw malformedXml(`mismatched end tag ${qname}`);
        }
        top.element.text = top.text.join("");
        stack.pop();
      } else if (top && this.src.startsWith("<!--", this.#pos)) {
        this.#comment();
      } else if (top && this.src.startsWith("<![CDATA[", this.#pos)) {
        const end = this.src.indexOf("]]>", this.#pos + 9);
        if (end < 0) throw malformedXml("unterminated CDATA section");
        top.text.push(normalizeNewlines(this.src.slice(this.#pos + 9, end)));
        this.#pos = end + 3;
      } else if (top && this.src.startsWith("<?", this.#pos)) {
        this.#instruction();
      } else if (this.src.startsWith("<!", this.#pos)) {
        throw malformedXml("DOCTYPE and ENTITY declarations are not allowed");
      } else {
        const { element, qname, selfClosing } = this.#startTag();
        if (top) top.element.children.push(element);
        else root = element;
        if (!selfClosing) {
          if (stack.length >= MAX_DEPTH) throw malformedXml("elements nested too deeply");
          stack.push({ element, qname, text: [] });
        }
      }
    }
  }

  #startTag(): { element: XmlElement; qname: string; selfClosing: boolean } {
    const qname = this.#name(this.#pos + 1);
    this.#pos += 1 + qname.length;
    const attributes: Record<string, string> = Object.create(null);
    const seen = new Set<string>();
    for (;;) {
      const space = this.#match(OPTIONAL_SPACE)![0];
      if (this.src.startsWith(">", this.#pos) || this.src.startsWith("/>", this.#pos)) {
        const selfClosing = this.src[this.#pos] === "/";
        this.#pos += selfClosing ? 2 : 1;
        const element = { name: localName(qname), attributes, children: [], text: "" };
        return { element, qname, selfClosing };
      }
      if (space.length === 0) throw malformedXml(`malformed start tag ${qname}`);
      const attribute = this.#name(this.#pos);
      this.#pos += attribute.length;
      const eq = this.#match(ATTRIBUTE_EQ);
      if (!eq) throw malformedXml(`attribute ${attribute} without a quoted value`);
      const end = this.src.indexOf(eq[1], this.#pos);
      if (end < 0) throw malformedXml(`unterminated attribute ${attribute}`);
      const raw = this.src.slice(this.#pos, end);
      if (raw.includes("<")) throw malformedXml(`'<' in attribute ${attribute}`);
      this.#pos = end + 1;
      if (seen.has(attribute)) throw malformedXml(`duplicate attribute ${attribute}`);
      seen.add(attribute);
      if (attribute === "xmlns" || attribute.startsWith("xmlns:")) continue;
      const name = localName(attribute);
      if (name in attributes) throw malformedXml(`duplicate attribute ${name}`);
      // Attribute-value normalization: literal whitespace becomes a space, references do not.
      attributes[name] = decodeText(raw.replace(/\r\n?|[\n\t]/g, " "));
    }
  }
}

function localName(qname: string): string {
  const parts = qname.split(":");
  if (parts.length > 2 || parts.some((p) => p === "")) throw malformedXml(`bad name ${qname}`);
  return parts[parts.length - 1];
}

/** XML end-of-line handling: CRLF and lone CR read as LF (references are not affected). */
function normalizeNewlines(text: string): string {
  return text.includes("\r") ? text.replace(/\r\n?/g, "\n") : text;
}

/** Decodes references in character data; an '&' that is not a valid reference is malformed. */
function decodeText(raw: string): string {
  const text = normalizeNewlines(raw);
  if (!text.includes("&")) return text;
  return text.replace(/&([^;&<]{0,12});?/g, (whole, ref: string) => {
    if (!whole.endsWith(";")) throw malformedXml("'&' is not the start of a reference");
    if (Object.hasOwn(NAMED_ENTITIES, ref)) return NAMED_ENTITIES[ref];
    const match = /^#(?:x([0-9A-Fa-f]{1,6})|([0-9]{1,7}))$/.exec(ref);
    if (!match) throw malformedXml(`unknown entity &${ref};`);
    const code = match[1] !== undefined ? parseInt(match[1], 16) : parseInt(match[2], 10);
    const illegal = code === 0 || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF) ||
      code === 0xFFFE || code === 0xFFFF;
    if (illegal) throw malformedXml(`character reference &${ref}; is not a character`);
    return String.fromCodePoint(code);
  });
}

// Helpers for reading request bodies

/** Child elements with a given local name. */
export function childrenNamed(element: XmlElement, name: string): XmlElement[] {
  return element.children.filter((child) => child.name === name);
}

/** The one child with this name; MalformedXML if it appears more than once. */
export function child(element: XmlElement, name: string): XmlElement | undefined {
  const found = childrenNamed(element, name);
  if (found.length > 1) throw malformedXml(`<${name}> appears more than once in <${element.name}>`);
  return found[0];
}

/**
 * Raw text of the one child with this name (undefined when absent). MalformedXML when the child
 * repeats or holds elements: a text field never has structure.
 */
export function childText(element: XmlElement, name: string): string | undefined {
  const found = child(element, name);
  if (found && found.children.length > 0) throw malformedXml(`<${name}> must hold text only`);
  return found?.text;
}

/** Like childText, but a missing child is MalformedXML. */
export function requiredChildText(element: XmlElement, name: string): string {
  const text = childText(element, name);
  if (text === undefined) throw malformedXml(`<${element.name}> is missing <${name}>`);
  return text;
}
