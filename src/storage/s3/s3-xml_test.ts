import assert from "node:assert/strict";
import {
  completeMultipartXml,
  parseErrorDocument,
  parseListBuckets,
  parseListObjects,
  parseXmlDocument,
} from "./s3-xml.ts";

Deno.test("ListObjectsV2 pages, url-encoded or raw", () => {
  const xml = `<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name>
<EncodingType>url</EncodingType><IsTruncated>true</IsTruncated>
<Contents><Key>a%20b%2Bc</Key><LastModified>2024-01-02T03:04:05.678Z</LastModified>
<ETag>&quot;abc-2&quot;</ETag><Size>12</Size></Contents>
<CommonPrefixes><Prefix>d%2F</Prefix></CommonPrefixes></ListBucketResult>`;
  assert.deepEqual(parseListObjects(xml), {
    objects: [{
      key: "a b+c",
      size: 12,
      etag: "abc-2",
      lastModified: Date.parse("2024-01-02T03:04:05.678Z"),
    }],
    commonPrefixes: ["d/"],
    isTruncated: true,
  });
  const raw = parseListObjects(
    '<ListBucketResult><Contents><Key>100%&amp;&#x1;</Key><Size>0</Size><ETag>"e"</ETag></Contents></ListBucketResult>',
  );
  assert.equal(raw.objects[0].key, "100%&\x01");
  assert.equal(raw.isTruncated, false);
});

Deno.test("error documents, bucket lists and the complete body", () => {
  assert.deepEqual(
    parseErrorDocument(
      "<?xml version='1.0'?><Error><Code>NoSuchBucket</Code><Message>m</Message></Error>",
    ),
    { code: "NoSuchBucket", message: "m" },
  );
  assert.equal(parseErrorDocument(""), null);
  assert.equal(parseErrorDocument("<CompleteMultipartUploadResult/>"), null);
  const buckets = parseListBuckets(
    "<ListAllMyBucketsResult><Buckets><Bucket><Name>a</Name><CreationDate>2024-01-01T00:00:00.000Z</CreationDate></Bucket></Buckets></ListAllMyBucketsResult>",
  );
  assert.deepEqual(buckets.buckets, [{ name: "a", created: new Date("2024-01-01T00:00:00.000Z") }]);
  assert.equal(
    completeMultipartXml(["e1", "e&2"]),
    '<?xml version="1.0" encoding="UTF-8"?><CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"e1"</ETag></Part><Part><PartNumber>2</PartNumber><ETag>"e&amp;2"</ETag></Part></CompleteMultipartUpload>',
  );
});

Deno.test("markup that does not nest is refused", () => {
  assert.throws(() => parseXmlDocument("<a><b></a>"), /closes "a" while "b" is open/);
  assert.throws(() => parseXmlDocument("<a>"), /incomplete/);
  assert.equal(parseXmlDocument("<!-- c --><a><![CDATA[<x>]]></a>").text, "<x>");
});
