/**
 * The OpenID Connect relying party svc needs for admin login (SPEC Authentication 10), on
 * oauth4webapi (the library the design names): provider discovery, the authorization URL with
 * PKCE (S256), state and nonce, the callback's parameters (RFC 9207 `iss` when present or
 * announced, `state`), the code exchange (`client_secret_basic`, or none without a secret) and
 * the ID token: issuer equal to the configured one, `aud`, `azp`, `exp`, `iat` (60 s tolerance),
 * `nonce`, and its signature against the provider's JWKS (the algorithms the provider announces,
 * RS256 when it announces none; never `none` or HMAC). Discovery documents are cached for ten
 * minutes; the library caches the key set per discovery document and refetches it for a key it
 * lacks (rotation).
 *
 * A plain `http://` issuer is refused unless `allowHttp()` (`advanced.oidc_allow_http_issuers`:
 * a provider on the same host, the tests' fake one). Every way a provider's answer can be wrong
 * is an `OidcError`; a provider that cannot be reached is another error (the caller's 502).
 */
import { Buffer } from "node:buffer";
import { randomBytes } from "node:crypto";
import * as oauth from "oauth4webapi";

export interface OidcProvider {
  name: string;
  issuer_url: string;
  client_id: string;
  client_secret: string | null;
  scopes: string;
}

export interface Discovery {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
}

export class OidcError extends Error {}

const CACHE_MS = 10 * 60_000;
const CLOCK_SKEW_SECS = 60;
const FETCH_TIMEOUT_MS = 10_000;

/** A random URL-safe token (state, nonce, PKCE verifier). */
export function randomToken(bytes = 32): string {
  return Buffer.from(randomBytes(bytes)).toString("base64url");
}

export interface OidcClientOptions {
  /** Whether `http://` issuers are allowed (`advanced.oidc_allow_http_issuers`). */
  allowHttp?: () => boolean;
  now?: () => number;
}

/** oauth4webapi's refusals (a wrong answer), as opposed to a provider out of reach. */
function isProtocolError(err: unknown): boolean {
  return err instanceof oauth.OperationProcessingError ||
    err instanceof oauth.ResponseBodyError ||
    err instanceof oauth.AuthorizationResponseError ||
    err instanceof oauth.WWWAuthenticateChallengeError ||
    err instanceof oauth.UnsupportedOperationError ||
    // The library's argument checks (a document or token of the wrong shape) and WebCrypto's
    // refusals of a key that does not fit the token's algorithm.
    err instanceof TypeError && typeof (err as { code?: unknown }).code === "string" ||
    err instanceof DOMException || err instanceof SyntaxError;
}

function described(err: unknown): string {
  const message = (err as Error).message ?? String(err);
  const cause = (err as { cause?: unknown }).cause;
  const error = cause instanceof URLSearchParams
    ? cause.get("error")
    : (cause as { error?: unknown } | undefined)?.error;
  return typeof error === "string" ? `${message} (${error})` : message;
}

export class OidcClient {
  readonly #discovery = new Map<string, { at: number; as: oauth.AuthorizationServer }>();
  readonly #allowHttp: () => boolean;
  readonly #now: () => number;

  constructor(options: OidcClientOptions = {}) {
    this.#allowHttp = options.allowHttp ?? (() => false);
    this.#now = options.now ?? Date.now;
  }

  #issuerUrl(issuerUrl: string): URL {
    let url: URL;
    try {
      url = new URL(issuerUrl);
    } catch {
      throw new OidcError(`The issuer "${issuerUrl}" is not a URL`);
    }
    if (url.protocol === "http:" && !this.#allowHttp()) {
      throw new OidcError(
        `The issuer "${issuerUrl}" is plain http; svc talks to providers over https only ` +
          `(advanced.oidc_allow_http_issuers allows http, for a provider on the same host)`,
      );
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new OidcError(`The issuer "${issuerUrl}" is not an http(s) URL`);
    }
    return url;
  }

  #http(): { [oauth.allowInsecureRequests]: boolean; signal: AbortSignal } {
    return {
      [oauth.allowInsecureRequests]: this.#allowHttp(),
      signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    };
  }

  async #server(issuerUrl: string): Promise<oauth.AuthorizationServer> {
    const issuer = this.#issuerUrl(issuerUrl);
    const cached = this.#discovery.get(issuerUrl);
    if (cached && this.#now() - cached.at < CACHE_MS) return cached.as;
    const response = await oauth.discoveryRequest(issuer, this.#http());
    let as: oauth.AuthorizationServer;
    try {
      as = await oauth.processDiscoveryResponse(issuer, response);
    } catch (err) {
      if (!isProtocolError(err)) throw err;
      throw new OidcError(`The discovery document of "${issuerUrl}": ${described(err)}`);
    }
    for (const field of ["authorization_endpoint", "token_endpoint", "jwks_uri"] as const) {
      if (typeof as[field] !== "string") {
        throw new OidcError(`The discovery document of "${issuerUrl}" lacks "${field}"`);
      }
      // An http issuer may name http endpoints; an https issuer's endpoints must be https.
      this.#issuerUrl(as[field]!);
    }
    this.#discovery.set(issuerUrl, { at: this.#now(), as });
    return as;
  }

  async discover(issuerUrl: string): Promise<Discovery> {
    const as = await this.#server(issuerUrl);
    return {
      issuer: as.issuer,
      authorization_endpoint: as.authorization_endpoint!,
      token_endpoint: as.token_endpoint!,
      jwks_uri: as.jwks_uri!,
    };
  }

  async authorizeUrl(
    provider: OidcProvider,
    redirectUri: string,
    flow: { state: string; nonce: string; verifier: string },
  ): Promise<string> {
    const as = await this.#server(provider.issuer_url);
    const url = new URL(as.authorization_endpoint!);
    url.searchParams.set("response_type", "code");
    url.searchParams.set("client_id", provider.client_id);
    url.searchParams.set("redirect_uri", redirectUri);
    url.searchParams.set("scope", provider.scopes);
    url.searchParams.set("state", flow.state);
    url.searchParams.set("nonce", flow.nonce);
    url.searchParams.set("code_challenge", await oauth.calculatePKCECodeChallenge(flow.verifier));
    url.searchParams.set("code_challenge_method", "S256");
    return url.href;
  }

  /**
   * Checks the callback's parameters (`iss`, `state`), exchanges the code and answers the
   * verified ID token's claims.
   */
  async signIn(
    provider: OidcProvider,
    redirectUri: string,
    callback: URLSearchParams,
    flow: { state: string; nonce: string; verifier: string },
  ): Promise<Record<string, unknown>> {
    const as = await this.#server(provider.issuer_url);
    const client: oauth.Client = {
      client_id: provider.client_id,
      [oauth.clockTolerance]: CLOCK_SKEW_SECS,
    };
    const auth = provider.client_secret
      ? oauth.ClientSecretBasic(provider.client_secret)
      : oauth.None();
    let claims: oauth.IDToken;
    try {
      const params = oauth.validateAuthResponse(as, client, callback, flow.state);
      const response = await oauth.authorizationCodeGrantRequest(
        as,
        client,
        auth,
        params,
        redirectUri,
        flow.verifier,
        this.#http(),
      );
      const tokens = await oauth.processAuthorizationCodeResponse(as, client, response, {
        expectedNonce: flow.nonce,
        requireIdToken: true,
      });
      await oauth.validateApplicationLevelSignature(as, response, this.#http());
      claims = oauth.getValidatedIdTokenClaims(tokens)!;
    } catch (err) {
      if (!isProtocolError(err)) throw err;
      throw new OidcError(`The provider's answer was refused: ${described(err)}`);
    }
    if (typeof claims.sub !== "string" || claims.sub === "") {
      throw new OidcError("The ID token has no subject");
    }
    return { ...claims } as Record<string, unknown>;
  }
}
