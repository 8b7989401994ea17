import assert from "node:assert/strict";
import { DeleteObjectsCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import { SvcError } from "../lib/errors.ts";
import {
  child,
  childrenNamed,
  childText,
  MALFORMED_XML_MESSAGE,
  parseXml,
  parseXmlBytes,
  requiredChildText,
  S3_XMLNS,
  XML_DECLARATION,
  xmlDocument,
  type XmlElement,
  xmlEscape,
} from "./xml.ts";

/** Keys that stress escaping: S3 allows every one of them. */
const TRICKY_KEYS = [
  "plain.txt",
  "  leading and trailing spaces  ",
  "ünïcödé/日本語/😀.bin",
  `a&b<c>d"e'f]]>g`,
  "line\nfeed\r\ncrlf\rcr\ttab",
  "ctrl\x01\x08\x1f.bin",
  "nel\u0085ls\u2028end",
];

function assertMalformed(fn: () => unknown, detail?: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof SvcError, String(err));
    assert.equal(err.code, "MalformedXML");
    assert.equal(err.status, 400);
    assert.equal(err.message, MALFORMED_XML_MESSAGE);
    if (detail) assert.match(String((err.cause as Error).message), detail);
    return true;
  });
}

Deno.test("xmlDocument renders nested, repeated and skipped values in order", () => {
  const xml = xmlDocument("ListBucketResult", {
    Name: "bucket",
    Prefix: "",
    KeyCount: 2,
    IsTruncated: false,
    Missing: undefined,
    Nothing: null,
    Contents: [
      { Key: "a", Size: 1n, LastModified: new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 6)) },
      { Key: "b", Owner: { ID: "id" } },
    ],
    CommonPrefixes: [],
  }, { xmlns: true });
  assert.equal(
    xml,
    XML_DECLARATION +
      `<ListBucketResult xmlns="${S3_XMLNS}"><Name>bucket</Name><Prefix></Prefix>` +
      "<KeyCount>2</KeyCount><IsTruncated>false</IsTruncated>" +
      "<Contents><Key>a</Key><Size>1</Size><LastModified>2024-01-02T03:04:05.006Z</LastModified>" +
      "</Contents><Contents><Key>b</Key><Owner><ID>id</ID></Owner></Contents></ListBucketResult>",
  );
});

Deno.test("xmlDocument: text roots, custom namespace, attributes, no namespace by default", () => {
  assert.equal(
    xmlDocument("LocationConstraint", "eu-west-1", { xmlns: true }),
    `${XML_DECLARATION}<LocationConstraint xmlns="${S3_XMLNS}">eu-west-1</LocationConstraint>`,
  );
  assert.equal(
    xmlDocument("LocationConstraint", undefined, { xmlns: "urn:x" }),
    `${XML_DECLARATION}<LocationConstraint xmlns="urn:x"></LocationConstraint>`,
  );
  assert.equal(
    xmlDocument("Error", { Code: "NoSuchKey" }),
    `${XML_DECLARATION}<Error><Code>NoSuchKey</Code></Error>`,
  );
  const grantee = {
    "@": { "xmlns:xsi": "http://www.w3.org/2001/XMLSchema-instance", "xsi:type": "CanonicalUser" },
    ID: "owner & co",
  };
  assert.equal(
    xmlDocument("Grant", { Grantee: grantee }),
    `${XML_DECLARATION}<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ` +
      `xsi:type="CanonicalUser"><ID>owner &amp; co</ID></Grantee></Grant>`,
  );
});

Deno.test("xmlDocument refuses what it cannot render", () => {
  assert.throws(() => xmlDocument("1bad", {}), TypeError);
  assert.throws(() => xmlDocument("A", { "bad name": "x" }), TypeError);
  assert.throws(() => xmlDocument("A", { N: NaN }), TypeError);
  assert.throws(() => xmlDocument("A", { N: [[1]] }), TypeError);
  assert.throws(() => xmlDocument("A", { M: new Map() }), TypeError);
  assert.throws(() => xmlDocument("A", { F: () => 1 }), TypeError);
  assert.throws(() => xmlDocument("A", [{}, {}]), TypeError);
});

Deno.test("xmlEscape: markup, line ends, forbidden characters", () => {
  assert.equal(
    xmlEscape(`<a href="x">&'</a>`),
    "&lt;a href=&quot;x&quot;&gt;&amp;&apos;&lt;/a&gt;",
  );
  assert.equal(xmlEscape("a\r\nb\tc"), "a&#xD;&#xA;b&#x9;c");
  assert.equal(xmlEscape("x\x01y\x1fz"), "x&#x1;y&#x1F;z", "S3-style references by default");
  assert.equal(xmlEscape("x\x01y", "replace"), "x\uFFFDy");
  assert.equal(xmlEscape("a\x00b"), "a\uFFFDb", "NUL is never written, not even as a reference");
  assert.equal(xmlEscape("\uFFFE\uFFFF"), "&#xFFFE;&#xFFFF;");
  assert.equal(xmlEscape("lone \uD800 surrogate"), "lone \uFFFD surrogate");
  assert.equal(xmlEscape("ok 😀 日本 é"), "ok 😀 日本 é");
});

Deno.test("build then parse returns every tricky key exactly", () => {
  const xml = xmlDocument("Delete", { Object: TRICKY_KEYS.map((Key) => ({ Key })) }, {
    xmlns: true,
  });
  const keys = childrenNamed(parseXml(xml), "Object").map((o) => childText(o, "Key"));
  assert.deepEqual(keys, TRICKY_KEYS);
});

Deno.test("parses a DeleteObjects body with namespace, empty VersionId and Quiet", () => {
  const root = parseXml(
    `<?xml version="1.0" encoding="UTF-8"?>\n<Delete xmlns="${S3_XMLNS}">\n` +
      "  <Object><Key> spaced key </Key><VersionId/></Object>\n" +
      "  <Object>\n    <Key>b&amp;c</Key>\n    <VersionId>v1</VersionId>\n  </Object>\n" +
      "  <Quiet>true</Quiet>\n</Delete>\n",
  );
  assert.equal(root.name, "Delete");
  assert.deepEqual({ ...root.attributes }, {});
  const objects = childrenNamed(root, "Object");
  assert.deepEqual(objects.map((o) => childText(o, "Key")), [" spaced key ", "b&c"]);
  assert.deepEqual(objects.map((o) => childText(o, "VersionId")), ["", "v1"]);
  assert.equal(childText(root, "Quiet"), "true");
  assert.equal(childText(root, "Missing"), undefined);
});

Deno.test("parses CompleteMultipartUpload and CreateBucketConfiguration bodies", () => {
  const complete = parseXml(
    "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>&quot;abc&quot;</ETag>" +
      "<ChecksumCRC32>y/Q5Jg==</ChecksumCRC32></Part><Part><PartNumber>2</PartNumber>" +
      '<ETag>"def"</ETag></Part></CompleteMultipartUpload>',
  );
  const parts = childrenNamed(complete, "Part").map((p) => [
    requiredChildText(p, "PartNumber"),
    requiredChildText(p, "ETag"),
    childText(p, "ChecksumCRC32"),
  ]);
  assert.deepEqual(parts, [["1", '"abc"', "y/Q5Jg=="], ["2", '"def"', undefined]]);
  const config = parseXml(
    `<CreateBucketConfiguration xmlns="${S3_XMLNS}"><LocationConstraint>eu-west-1` +
      "</LocationConstraint></CreateBucketConfiguration>",
  );
  assert.equal(requiredChildText(config, "LocationConstraint"), "eu-west-1");
});

Deno.test("prefixes are stripped, xmlns ignored, attributes decoded and normalized", () => {
  const root = parseXml(
    `<s3:Delete xmlns:s3="${S3_XMLNS}" xmlns="urn:default" a='1 &amp; 2' xsi:type="x&#10;y" ` +
      `b="tab\there"><s3:Object><s3:Key>k</s3:Key></s3:Object></s3:Delete >`,
  );
  assert.equal(root.name, "Delete");
  assert.deepEqual({ ...root.attributes }, { a: "1 & 2", type: "x\ny", b: "tab here" });
  assert.equal(parseXml("<a b=']]>'/>").attributes.b, "]]>", "']]>' is fine in attributes");
  assert.equal(childText(child(root, "Object")!, "Key"), "k");
});

Deno.test("text: CDATA, comments, PIs, entities, references, newline handling", () => {
  const root = parseXml(
    "\uFEFF<?xml version='1.0' standalone='yes'?><!-- lead --><?app data?>" +
      "<K>a<!-- c -->b<![CDATA[<&>]]]]>&lt;&gt;&amp;&quot;&apos;&#10;&#x1F600;&#x1;" +
      "\r\nx\ry&#13;<?pi x?></K><!-- tail -->\n",
  );
  assert.equal(root.text, "ab<&>]]<>&\"'\n😀\x01\nx\ny\r");
  assert.deepEqual(
    parseXml("<a>\t\x01\x1f</a>").text,
    "\t\x01\x1f",
    "raw C0 controls as the SDK sends",
  );
});

Deno.test("structure: children, self-closing, whitespace text kept raw", () => {
  const root = parseXml("<a>\n <b x='1'/> <c>t</c>\n</a>");
  assert.deepEqual(root.children.map((c) => c.name), ["b", "c"]);
  assert.equal(root.text, "\n  \n");
  assert.equal(root.children[0].text, "");
  const simplify = (e: XmlElement): unknown => [e.name, e.text, e.children.map(simplify)];
  assert.deepEqual(simplify(parseXml("<r><s><t/></s></r>")), ["r", "", [["s", "", [[
    "t",
    "",
    [],
  ]]]]]);
});

Deno.test("helpers refuse repeated or structured text fields and missing required ones", () => {
  const root = parseXml("<Object><Key>a</Key><Key>b</Key><V><x/></V></Object>");
  assertMalformed(() => childText(root, "Key"), /more than once/);
  assertMalformed(() => childText(root, "V"), /text only/);
  assertMalformed(() => requiredChildText(root, "VersionId"), /missing <VersionId>/);
  assert.equal(childrenNamed(root, "Key").length, 2);
});

Deno.test("parseXmlBytes decodes UTF-8 strictly and limits size", () => {
  const utf8 = new TextEncoder().encode("\uFEFF<Key>日本</Key>");
  assert.equal(parseXmlBytes(utf8).text, "日本");
  assertMalformed(
    () => parseXmlBytes(new Uint8Array([0x3c, 0x61, 0x3e, 0xff, 0x3c, 0x2f, 0x61, 0x3e])),
    /UTF-8/,
  );
  assertMalformed(() => parseXmlBytes(utf8, 5), /too large/);
  assertMalformed(() => parseXml("<a>xxxxxx</a>", 5), /too large/);
});

const MALFORMED: [string, string, RegExp][] = [
  ["empty", "", /no root/],
  ["whitespace only", " \n\t", /no root/],
  ["declaration only", '<?xml version="1.0"?>', /no root/],
  ["text before root", "x<a/>", /no root/],
  ["unclosed root", "<a>", /unclosed/],
  ["unclosed child", "<a><b>text</a>", /mismatched end tag a/],
  ["mismatched", "<a></b>", /mismatched/],
  ["crossed", "<a><b></a></b>", /mismatched/],
  ["end tag first", "</a>", /end tag without start/],
  ["garbage after root", "<a/>x", /after the root/],
  ["two roots", "<a/><b/>", /after the root/],
  ["DOCTYPE", "<!DOCTYPE a><a/>", /DOCTYPE/],
  ["entity expansion", '<!DOCTYPE a [<!ENTITY x "yyyy">]><a>&x;</a>', /DOCTYPE/],
  ["ENTITY inside", "<a><!ENTITY x 'y'></a>", /not allowed/],
  ["unknown entity", "<a>&nbsp;</a>", /unknown entity/],
  ["external entity ref", "<a>&x;</a>", /unknown entity/],
  ["inherited property as entity", "<a>&constructor;&__proto__;</a>", /unknown entity/],
  ["entity without ;", "<a>&amp</a>", /not the start of a reference/],
  ["bare &", "<a>fish & chips</a>", /not the start/],
  ["NUL reference", "<a>&#0;</a>", /not a character/],
  ["surrogate reference", "<a>&#xD800;</a>", /not a character/],
  ["reference out of range", "<a>&#x110000;</a>", /not a character/],
  ["empty reference", "<a>&#;</a>", /unknown entity/],
  ["]]> in text", "<a>x]]>y</a>", /']]>'/],
  ["duplicate attribute", '<a b="1" b="2"/>', /duplicate attribute/],
  ["duplicate after prefix strip", '<a x:b="1" y:b="2"/>', /duplicate attribute/],
  ["unquoted attribute", "<a b=1/>", /quoted value/],
  ["< in attribute", '<a b="<"/>', /'<' in attribute/],
  ["attributes without space", '<a b="1"c="2"/>', /malformed start tag/],
  ["unterminated attribute", '<a b="1/>', /unterminated attribute/],
  ["-- in comment", "<a><!-- x -- y --></a>", /malformed comment/],
  ["unterminated comment", "<a><!-- x </a>", /malformed comment/],
  ["unterminated CDATA", "<a><![CDATA[x</a>", /unterminated CDATA/],
  ["NUL character", "<a>\0</a>", /not allowed/],
  ["U+FFFE character", "<a>\uFFFE</a>", /not allowed/],
  ["second declaration", '<?xml version="1.0"?><?xml version="1.0"?><a/>', /misplaced/],
  ["declaration after space", ' <?xml version="1.0"?><a/>', /misplaced/],
  ["declaration without version", '<?xml encoding="UTF-8"?><a/>', /malformed XML declaration/],
  ["unterminated declaration", '<?xml version="1.0"<a/>', /XML declaration/],
  ["bad element name", "<1a/>", /expected a name/],
  ["two prefixes", "<a:b:c/>", /bad name/],
  ["empty prefix", "<:a/>", /bad name/],
  ["space after <", "< a/>", /expected a name/],
  ["too deep", "<a>".repeat(40) + "</a>".repeat(40), /too deeply/],
];

for (const [name, text, detail] of MALFORMED) {
  Deno.test(`malformed: ${name} → MalformedXML`, () =>
    assertMalformed(() => parseXml(text), detail));
}

Deno.test({
  name: "interop with @aws-sdk/client-s3: its DeleteObjects body and our ListObjectsV2 reply",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    let deleteBody = "";
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
      const url = new URL(req.url);
      const headers = { "content-type": "application/xml" };
      if (url.searchParams.has("delete")) {
        deleteBody = await req.text();
        const keys = childrenNamed(parseXml(deleteBody), "Object").map((o) =>
          requiredChildText(o, "Key")
        );
        const body = xmlDocument("DeleteResult", { Deleted: keys.map((Key) => ({ Key })) }, {
          xmlns: true,
        });
        return new Response(body, { headers });
      }
      const body = xmlDocument("ListBucketResult", {
        Name: "b",
        Prefix: "",
        KeyCount: TRICKY_KEYS.length,
        MaxKeys: 1000,
        IsTruncated: false,
        Contents: TRICKY_KEYS.map((Key) => ({ Key, Size: 1, ETag: '"0"' })),
      }, { xmlns: true });
      return new Response(body, { headers });
    });
    const client = new S3Client({
      endpoint: `http://127.0.0.1:${server.addr.port}`,
      forcePathStyle: true,
      region: "us-east-1",
      credentials: { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret" },
    });
    try {
      const deleted = await client.send(
        new DeleteObjectsCommand({
          Bucket: "b",
          Delete: { Objects: TRICKY_KEYS.map((Key) => ({ Key })), Quiet: false },
        }),
      );
      assert.deepEqual(deleted.Deleted?.map((d) => d.Key), TRICKY_KEYS);
      assert.ok(
        deleteBody.includes("\x01"),
        "the SDK sends C0 controls raw; the parser takes them",
      );
      const listed = await client.send(new ListObjectsV2Command({ Bucket: "b" }));
      assert.deepEqual(listed.Contents?.map((c) => c.Key), TRICKY_KEYS);
    } finally {
      client.destroy();
      await server.shutdown();
    }
  },
});
