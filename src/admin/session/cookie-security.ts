/**
 * When the admin session cookie carries `Secure`, and when a login deserves a warning.
 *
 * `secure_cookies: auto` follows the transport of each request: a browser drops a `Secure` cookie
 * it received over plain HTTP, so a console reached as `http://host:9000` from another machine
 * would accept the password and then never stay logged in, with no error anywhere. Over TLS (the
 * listener's own, or a trusted proxy saying `X-Forwarded-Proto: https`) the flag is set.
 */
import { getLogger } from "../../observability/mod.ts";

const log = getLogger("svc::admin");

/** `advanced.secure_cookies`. */
export type SecureCookies = boolean | "auto";

/** Whether the client reached svc over TLS, directly or through a trusted proxy. */
export function requestIsHttps(request: Request, trustProxyHeaders: boolean): boolean {
  if (new URL(request.url).protocol === "https:") return true;
  if (!trustProxyHeaders) return false;
  // The first entry is the hop nearest the client: the one the browser spoke to.
  const proto = request.headers.get("x-forwarded-proto")?.split(",")[0].trim().toLowerCase();
  return proto === "https";
}

/** The `Secure` flag for a cookie sent over a transport that is (or is not) TLS. */
export function cookieIsSecure(setting: SecureCookies, https: boolean): boolean {
  return setting === "auto" ? https : setting;
}

/** 127.0.0.0/8 and ::1, also in their IPv4-mapped form. */
export function isLoopback(ip: string): boolean {
  const address = ip.toLowerCase().replace(/^::ffff:/, "");
  return address === "::1" || address === "localhost" || /^127\.\d+\.\d+\.\d+$/.test(address);
}

/** Addresses remembered before the memory starts over (a flood of addresses cannot grow it). */
const REMEMBERED = 1024;

/**
 * Decides which admin logins over plain HTTP to warn about: from another host only (a loopback
 * login never crosses a network), and once per client address per process so a console that
 * logs in every few hours does not flood the log.
 */
export class PlainLoginWarnings {
  readonly #warned = new Set<string>();

  /** True the first time an admin logs in from `ip` over plain HTTP. */
  shouldWarn(ip: string, https: boolean): boolean {
    if (https || isLoopback(ip) || this.#warned.has(ip)) return false;
    if (this.#warned.size >= REMEMBERED) this.#warned.clear();
    this.#warned.add(ip);
    return true;
  }

  /** Logs the warning when `shouldWarn` says so. */
  note(ip: string, https: boolean, user: string): void {
    if (!this.shouldWarn(ip, https)) return;
    log.warn(
      `admin login of "${user}" from ${ip} over plain HTTP: the password and the session ` +
        `cookie crossed the network unencrypted; enable advanced.tls or put svc behind an ` +
        `HTTPS proxy (with trust_proxy_headers)`,
      { user, ip },
    );
  }
}
