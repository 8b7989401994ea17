/**
 * A test aid, never for production: `SVC_TEST_CLOCK_OFFSET_SECS` (a signed integer of seconds)
 * shifts the clock svc stamps objects with (Last-Modified) and the clock its jobs judge ages by
 * (lifecycle expiry, retain-newest), so a black-box test can start svc 30 days in the past, PUT
 * "old" objects, restart it at the present and watch a rule expire them, without sleeping.
 *
 * It deliberately does not reach request authentication (SigV4 dates, presign expiry, session
 * cookies and their TTLs, the replay window, lockouts) nor logs, audit and event times: those
 * keep the real time, so a shifted server still accepts clients whose clock is right. A set
 * offset is logged as a WARN at startup.
 */
import { ConfigError } from "../config/mod.ts";
import { type Clock, offsetClock } from "../jobs/mod.ts";

export const TEST_CLOCK_VARIABLE = "SVC_TEST_CLOCK_OFFSET_SECS";

/** The offset in seconds (0 when unset); a value that is not an integer is a ConfigError. */
export function testClockOffsetSecs(env: Record<string, string | undefined>): number {
  const raw = env[TEST_CLOCK_VARIABLE]?.trim();
  if (raw === undefined || raw === "") return 0;
  if (!/^[+-]?\d{1,12}$/.test(raw)) {
    throw new ConfigError(
      `${TEST_CLOCK_VARIABLE} must be a whole number of seconds (e.g. -2592000), got "${raw}"`,
    );
  }
  return Number(raw);
}

/** The clock of objects and jobs for this process. */
export function processClock(env: Record<string, string | undefined>): Clock {
  return offsetClock(testClockOffsetSecs(env) * 1000);
}
