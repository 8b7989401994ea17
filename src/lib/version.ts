/** The running version, reported by whoami and svc_build_info. Kept in step with package.json. */
export const VERSION = "0.1.0";
