/**
 * What a listing of one bucket may show: the IAM index computes it, the S3 listings apply it.
 * Only the key ranges under `prefixes` are read ("" is the whole bucket), so keys outside every
 * grant are never walked; `visible`, when set, drops single entries inside those ranges (an
 * explicit Deny on part of a grant). A common prefix is asked with kind "prefix" and must be
 * refused only when no key under it is visible.
 */
export interface KeyVisibility {
  prefixes: readonly string[];
  visible?: (entry: string, kind: "object" | "prefix") => boolean;
}
