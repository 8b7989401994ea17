/**
 * S3's general purpose bucket naming rules. In lib, not s3, because more than the S3 API names
 * buckets: the admin API creates them and the jobs move them, and all refuse the same names.
 */

/**
 * Reserved by S3 for other kinds of bucket and for aliases (general purpose bucket naming
 * rules, AWS S3 user guide, checked 2026). `sthree-` also covers `sthree-configurator`.
 * Not applied: the `-an` suffix, which the guide only requires of buckets created in an
 * account regional namespace, a concept svc does not have.
 */
const RESERVED_PREFIXES = ["xn--", "sthree-", "amzn-s3-demo-"];
const RESERVED_SUFFIXES = ["-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"];

const BUCKET_SHAPE = /^[a-z0-9][a-z0-9.-]*[a-z0-9]$/;
const IPV4_SHAPE = /^\d{1,3}(\.\d{1,3}){3}$/;

/** Why a bucket name is invalid, or null when it is fine. */
export function bucketNameProblem(name: string): string | null {
  if (name.length < 3 || name.length > 63) return "it must be 3 to 63 characters long";
  if (!BUCKET_SHAPE.test(name)) {
    return "it may contain only lowercase letters, digits, dots and hyphens, " +
      "and must begin and end with a letter or digit";
  }
  if (name.includes("..")) return "it must not contain two adjacent dots";
  // Each dot-separated label must begin and end with a letter or digit (DNS), as S3 requires.
  if (name.includes(".-") || name.includes("-.")) {
    return "a dot must not be next to a hyphen";
  }
  if (IPV4_SHAPE.test(name)) return "it must not be formatted as an IP address";
  const prefix = RESERVED_PREFIXES.find((p) => name.startsWith(p));
  if (prefix !== undefined) return `the prefix "${prefix}" is reserved`;
  const suffix = RESERVED_SUFFIXES.find((s) => name.endsWith(s));
  if (suffix !== undefined) return `the suffix "${suffix}" is reserved`;
  return null;
}
