/**
 * Operator admission blocks (`admission.blocks` in the config) turned into chain blocks.
 *
 * `path_glob` is a glob over the full key: `*` matches any run of characters except `/`, `**`
 * any run including `/`, `?` one character except `/`; everything else is literal. A
 * `config_flag` names a runtime flag; `maintenance_mode` is recognised but always false in this
 * build, and any other name never matches either, each with a warning when the chain is built.
 */
import { type AdmissionBlock as BlockConfig, ANONYMOUS_METHODS } from "../config/mod.ts";
import type { AdmissionAction, AdmissionBlock, AdmissionMatch } from "./chain.ts";
import { addressMatcher } from "../http/mod.ts";
import { globMatcher } from "../lib/mod.ts";

export function operatorBlock(config: BlockConfig, warnings: string[]): AdmissionBlock {
  const m = config.match;
  const match: AdmissionMatch = {};
  if (m.method !== undefined) match.methods = m.method.map((method) => method.toUpperCase());
  if (m.bucket !== undefined) match.bucket = m.bucket;
  if (m.path_glob !== undefined) match.key = globMatcher(m.path_glob);
  if (m.authenticated !== undefined) match.authenticated = m.authenticated;
  if (m.source_ip !== undefined) match.clientIp = addressMatcher([m.source_ip]);
  if (m.source_ip_list !== undefined) match.clientIp = addressMatcher(m.source_ip_list);
  if (m.config_flag !== undefined) {
    match.never = true;
    warnings.push(
      m.config_flag === "maintenance_mode"
        ? `admission block "${config.name}": config_flag "maintenance_mode" always evaluates ` +
          "false in this build; the block never matches"
        : `admission block "${config.name}": unknown config_flag "${m.config_flag}"; the block ` +
          "never matches",
    );
  }
  if (config.action === "allow-anonymous" && m.method === undefined) {
    warnings.push(
      `admission block "${config.name}": allow-anonymous admits anonymous reads only ` +
        `(${ANONYMOUS_METHODS.join(", ")}); writes it matches go on to authentication`,
    );
  }
  const action: AdmissionAction = typeof config.action === "string"
    ? config.action as AdmissionAction
    : { type: "reject", status: config.action.status, message: config.action.message };
  return { name: config.name, match, action };
}
