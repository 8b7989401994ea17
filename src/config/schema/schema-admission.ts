/**
 * The `admission` section: an ordered chain of blocks, first match wins. Names are unique
 * (checked in schema.ts) and the `public-prefix:` namespace is reserved for the blocks svc
 * synthesizes from bucket public prefixes.
 */
import * as v from "valibot";
import {
  bool,
  describe,
  int,
  isIp,
  isIpOrCidr,
  list,
  matching,
  oneOf,
  str,
  strict,
} from "./schema-common.ts";

export const ADMISSION_METHODS = ["GET", "HEAD", "PUT", "POST", "DELETE", "PATCH", "OPTIONS"];
export const MAX_SOURCE_IP_LIST = 4096;
export const RESERVED_BLOCK_PREFIX = "public-prefix:";

const blockName = v.pipe(
  matching(/^[A-Za-z0-9_:.-]{1,128}$/, "1-128 characters of [A-Za-z0-9_:.-]"),
  v.check(
    (name) => !name.startsWith(RESERVED_BLOCK_PREFIX),
    (issue) => `"${issue.input}": names starting with "${RESERVED_BLOCK_PREFIX}" are reserved`,
  ),
);

const method = v.pipe(
  str,
  v.transform((m: string) => m.toUpperCase()),
  v.check(
    (m) => ADMISSION_METHODS.includes(m),
    (issue) => `expected one of ${ADMISSION_METHODS.join(" ")}, got "${issue.input}"`,
  ),
);

const ipOrCidr = v.pipe(
  str,
  v.check(isIpOrCidr, (issue) => `expected an IP address or CIDR, got "${issue.input}"`),
);

export const admissionMatchSchema = v.pipe(
  strict({
    method: v.optional(list(method)),
    source_ip: v.optional(
      v.pipe(str, v.check(isIp, (issue) => `expected an IP address, got "${issue.input}"`)),
    ),
    source_ip_list: v.optional(
      v.pipe(
        list(ipOrCidr),
        v.maxLength(
          MAX_SOURCE_IP_LIST,
          (issue) =>
            `at most ${MAX_SOURCE_IP_LIST} entries, got ${(issue.input as unknown[]).length}`,
        ),
      ),
    ),
    bucket: v.optional(v.pipe(str, v.transform((b: string) => b.toLowerCase()))),
    path_glob: v.optional(str),
    authenticated: v.optional(bool),
    config_flag: v.optional(str),
  }),
  v.forward(
    v.check(
      (m) => m.source_ip === undefined || m.source_ip_list === undefined,
      "source_ip and source_ip_list are exclusive; set only one",
    ),
    ["source_ip_list"],
  ),
);

const rejectAction = strict({
  type: v.literal("reject", (issue) => `expected "reject", got ${describe(issue.input)}`),
  status: int(400, 599),
  message: v.optional(str),
});

export const admissionActionSchema = v.union(
  [oneOf(["allow-anonymous", "deny", "continue"]), rejectAction],
  (issue) =>
    `expected allow-anonymous, deny, continue or {type: reject, status}, got ${
      describe(issue.input)
    }`,
);

/** Methods an anonymous request may use: those that change nothing (SPEC Authentication 6). */
export const ANONYMOUS_METHODS = ["GET", "HEAD", "OPTIONS"];

export const admissionBlockSchema = v.pipe(
  strict({
    name: blockName,
    match: v.optional(admissionMatchSchema, {}),
    action: admissionActionSchema,
  }),
  // Writes always need authentication: a block that says it admits anonymous writes is a
  // mistake to refuse at load, not a rule to half-apply (see src/s3/admission.ts for blocks
  // without a method list).
  v.forward(
    v.check(
      (block) =>
        block.action !== "allow-anonymous" ||
        (block.match.method ?? []).every((m) => ANONYMOUS_METHODS.includes(m)),
      (issue) => {
        const block = issue.input as { match: { method?: string[] } };
        const writes = (block.match.method ?? []).filter((m) => !ANONYMOUS_METHODS.includes(m));
        return `allow-anonymous cannot admit ${writes.join(", ")}: writes always need ` +
          `authentication; match only ${ANONYMOUS_METHODS.join(", ")} or use continue`;
      },
    ),
    ["match", "method"],
  ),
);

export const admissionSchema = strict({
  blocks: v.optional(list(admissionBlockSchema), []),
});

export type AdmissionConfig = v.InferOutput<typeof admissionSchema>;
export type AdmissionBlock = v.InferOutput<typeof admissionBlockSchema>;
