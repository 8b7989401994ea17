"""ListObjects v1 through boto3 (which sends encoding-type=url and decodes what AWS encodes)."""
import json, sys
import boto3
from botocore.config import Config

endpoint, access, secret, bucket = sys.argv[1:5]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=access,
                  aws_secret_access_key=secret, region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 0}))
s3.create_bucket(Bucket=bucket)
keys = ["nl\nx/a b", "nl\nx/c+d", "nl\nx/sub\n/e", "other"]
for key in keys:
    s3.put_object(Bucket=bucket, Key=key, Body=b"x")
out = {}
r = s3.list_objects(Bucket=bucket, Prefix="nl\nx/", Delimiter="/")
out["prefix"] = r.get("Prefix")
out["delimiter"] = r.get("Delimiter")
out["keys"] = [c["Key"] for c in r.get("Contents", [])]
out["common"] = [c["Prefix"] for c in r.get("CommonPrefixes", [])]
pages = []
marker = ""
while True:
    r = s3.list_objects(Bucket=bucket, Prefix="nl\n", MaxKeys=1, Marker=marker)
    pages.append({"marker": r.get("Marker"), "next": r.get("NextMarker"), "prefix": r.get("Prefix"),
                  "keys": [c["Key"] for c in r.get("Contents", [])]})
    if not r.get("IsTruncated"):
        break
    marker = r.get("NextMarker") or r["Contents"][-1]["Key"]
out["pages"] = pages
print(json.dumps(out))
