/**
 * Constants of the archive token form ("expanded form", docs/DELTA.md "Archive token form").
 */

/** "SVCX": the first four bytes of every token form. */
export const MAGIC = new Uint8Array([0x53, 0x56, 0x43, 0x58]);
export const VERSION = 1;
/** The container byte after the version (informational: contraction does not need it). */
export const FORMAT_BYTE = { gzip: 1, zip: 2 } as const;

/** Record tags. */
export const TAG_RAW = 0x52; // "R": varint n, n bytes copied verbatim
export const TAG_DEFLATE = 0x44; // "D": one deflate stream, block by block
export const TAG_END = 0x45; // "E": varint original size, 32-byte sha256 of the original

/** Low two bits of a token run's varint: what follows the run's literals. */
/** (A match's distance - 1, u16le, is in its segment's distance list, after the segment's runs.) */
export const RUN_MATCH = 0; // a match: u8 length - 3
export const RUN_END = 1; // the block's end-of-block code (ends the segment too)
export const RUN_MATCH_284 = 2; // a match of length 258 coded as code 284 + extra 31
export const RUN_MORE = 3; // nothing: the literal run continues in the next run
/**
 * A run of kind RUN_MORE without literals (never needed otherwise) ends a segment early: the
 * distances of the segment's matches follow, as after a run of kind RUN_END.
 */
export const SEGMENT_BREAK = RUN_MORE;
/** Run bytes after which expansion ends a segment (bounds contraction's segment buffer). */
export const SEGMENT_BYTES = 1 << 20;
/** Matches after which expansion ends a segment (bounds both sides' distance buffer). */
export const SEGMENT_MATCHES = 1 << 16;

/** Longest literal run held before it is written (bounds the expansion's memory). */
export const MAX_RUN = 1 << 16;
/** Longest RAW record. */
export const MAX_RAW = 1 << 20;
