/**
 * What a listing of one bucket may show: the IAM index computes it, the S3 listings apply it.
 * Only the key ranges under `prefixes` are read ("" is the whole bucket), so keys outside every
 * grant are never walked; `visible`, when set, drops single entries inside those ranges (an
 * explicit Deny on part of a grant, a key the user may list but not read). A common prefix is
 * shown only when a visible key lies under it, and is then asked with kind "prefix" as well (a
 * Deny on `s3:prefix` may still refuse it).
 */
export interface KeyVisibility {
  prefixes: readonly string[];
  visible?: (entry: string, kind: "object" | "prefix") => boolean;
  /**
   * For a hidden key: a prefix of it under which every key is hidden too (an unconditional Deny
   * on `bucket/private/*`), so the listing jumps over the range instead of reading it.
   */
  hiddenRange?: (key: string) => string | undefined;
}
