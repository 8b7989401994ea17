/**
 * Which objects are worth a delta against their deltaspace's baseline (SPEC item 11 leaves the
 * list to us). A delta only pays off when consecutive versions share long runs of identical
 * bytes, which holds for archives and dumps stored uncompressed or compressed member by member,
 * and fails for whole-stream compressed data, where one changed input byte changes every output
 * byte after it.
 *
 * Eligible (by the final extension of the key's last segment, case-insensitive):
 *
 * - `.zip .jar .war .ear`: zip containers deflate each member on its own, so unchanged members
 *   keep identical bytes from one build to the next; their deltas are made in archive token form
 *   (archive-form.ts), so even changed members cost only their changes.
 * - `.gz .tgz .crate` (so `.tar.gz`, npm tarballs, Rust crates): one deflate stream changes every
 *   compressed byte after a change, so these are encoded in archive token form, which keeps
 *   unchanged content unchanged; the PUT checks that the form rebuilds the exact bytes first.
 * - `.tar`: uncompressed; members are stored verbatim.
 * - `.dmg .iso`: disk images; unchanged files keep their blocks.
 * - `.sql .dump .bak .backup`: database dumps and backups, mostly unchanged between runs.
 * - Additions of ours:
 *   - `.img`: raw disk image, uncompressed, same reasoning as `.iso`.
 *   - `.cpio`: uncompressed archive like `.tar` (initramfs sources, rpm payload before packing).
 *   - `.whl .nupkg .aar .apk .vsix`: Python, NuGet, Android and VS Code packages are zip
 *     containers with per-member compression, the same case as `.jar`.
 *   - `.sqlite`: SQLite database snapshots are page-structured; successive copies share most pages.
 *
 * Deliberately passthrough:
 *
 * - Whole-stream compression other than gzip: `.xz .txz .bz2 .tbz2 .zst .lz4 .lzma .z .7z .rar`.
 * - Packages whose payload is one compressed stream: `.deb .rpm` (xz/zstd payload).
 * - `.vmdk .ova .qcow2`: their common distribution forms (stream-optimized VMDK, compressed
 *   qcow2) compress each grain or cluster, so little survives between versions.
 * - Media (images, audio, video): already entropy coded.
 * - Checksum and signature sidecars (`app.zip.sha256`, `.sha1`, `.md5`, `.sig`, `.asc`, ...):
 *   tiny, and they differ completely between versions.
 * - Anything else, keys without an extension, dotfiles such as `.zip` (the name is the dotfile,
 *   not an extension) and directory markers (`a/b/`).
 *
 * The ratio test on every PUT (`max_delta_ratio`) still guards the eligible types: a poor delta
 * is stored passthrough anyway, so the list errs towards types that usually delta well.
 */

/** Extensions (lowercase, without the dot) whose objects are delta candidates. */
export const DELTA_ELIGIBLE_EXTENSIONS: ReadonlySet<string> = new Set([
  "zip",
  "tar",
  "jar",
  "war",
  "ear",
  "dmg",
  "iso",
  "sql",
  "dump",
  "bak",
  "backup",
  "img",
  "cpio",
  "whl",
  "nupkg",
  "aar",
  "apk",
  "vsix",
  "sqlite",
  "gz",
  "tgz",
  "crate",
]);

/** Whole-stream compressed formats; named only so debug logs can say why. */
export const COMPRESSED_EXTENSIONS: ReadonlySet<string> = new Set([
  "xz",
  "txz",
  "bz2",
  "tbz2",
  "zst",
  "lz4",
  "lzma",
  "z",
  "7z",
  "rar",
  "deb",
  "rpm",
  "vmdk",
  "ova",
  "qcow2",
  "jpg",
  "jpeg",
  "png",
  "gif",
  "webp",
  "avif",
  "heic",
  "mp3",
  "aac",
  "ogg",
  "opus",
  "flac",
  "m4a",
  "mp4",
  "m4v",
  "mkv",
  "mov",
  "webm",
  "avi",
]);

/** Checksum and signature sidecars. */
export const SIDECAR_EXTENSIONS: ReadonlySet<string> = new Set([
  "sha1",
  "sha256",
  "sha512",
  "md5",
  "sig",
  "asc",
  "gpg",
  "minisig",
]);

export type EligibilityReason =
  | "eligible-type"
  | "compression-disabled"
  | "directory-marker"
  | "empty"
  | "too-large"
  | "no-extension"
  | "compressed-format"
  | "checksum-or-signature"
  | "type-not-listed";

export interface Eligibility {
  eligible: boolean;
  /** Why, for debug logs. */
  reason: EligibilityReason;
  /** The lowercase final extension that was judged, "" when there is none. */
  extension: string;
}

export interface EligibilityInput {
  /** Logical size of the object in bytes. */
  size: number;
  /** `max_object_size`: the ceiling for delta processing. */
  maxObjectSize: number;
  /** The bucket's `compression` flag (after falling back to the global one); default true. */
  compression?: boolean;
}

/**
 * The lowercase final extension of the key's last segment, without the dot; "" for none. A
 * leading dot starts a dotfile name, not an extension (`.zip` and `a/.bashrc` have none).
 */
export function finalExtension(key: string): string {
  const name = key.slice(key.lastIndexOf("/") + 1);
  const dot = name.lastIndexOf(".");
  if (dot <= 0 || dot === name.length - 1) return "";
  return name.slice(dot + 1).toLowerCase();
}

/** Whether an object of this key and size should be tried as a delta. */
export function isDeltaEligible(key: string, input: EligibilityInput): Eligibility {
  const extension = finalExtension(key);
  const verdict = (eligible: boolean, reason: EligibilityReason): Eligibility => ({
    eligible,
    reason,
    extension,
  });
  if (input.compression === false) return verdict(false, "compression-disabled");
  if (key.endsWith("/")) return verdict(false, "directory-marker");
  if (!(input.size > 0)) return verdict(false, "empty");
  if (input.size > input.maxObjectSize) return verdict(false, "too-large");
  if (extension === "") return verdict(false, "no-extension");
  if (DELTA_ELIGIBLE_EXTENSIONS.has(extension)) return verdict(true, "eligible-type");
  if (SIDECAR_EXTENSIONS.has(extension)) return verdict(false, "checksum-or-signature");
  if (COMPRESSED_EXTENSIONS.has(extension)) return verdict(false, "compressed-format");
  return verdict(false, "type-not-listed");
}

/**
 * The delta-keep threshold for a bucket: its `max_delta_ratio` override when it is a number in
 * [0, 1], else the global one. Config loading validates both; an out-of-range override reaching
 * here falls back rather than failing a PUT, while a bad global value is a programming error.
 */
export function effectiveMaxDeltaRatio(globalRatio: number, bucketOverride?: number): number {
  if (!isRatio(globalRatio)) throw new RangeError(`max_delta_ratio out of range: ${globalRatio}`);
  return bucketOverride !== undefined && isRatio(bucketOverride) ? bucketOverride : globalRatio;
}

/** SPEC item 4: a delta is kept only when delta_size / original_size is strictly below the ratio. */
export function keepsDelta(deltaSize: number, originalSize: number, maxRatio: number): boolean {
  if (!(originalSize > 0)) return false;
  return deltaSize / originalSize < maxRatio;
}

function isRatio(value: number): boolean {
  return Number.isFinite(value) && value >= 0 && value <= 1;
}
