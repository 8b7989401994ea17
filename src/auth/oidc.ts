/**
 * The OpenID Connect relying party svc needs for admin login (SPEC Authentication 10): provider
 * discovery, the authorization URL with PKCE (S256), state and nonce, the code exchange, and ID
 * token verification (RS256/ES256 against the provider's JWKS: issuer, audience, expiry and
 * nonce checked). Discovery documents and key sets are cached for ten minutes; a token signed by
 * a key the cache lacks refreshes the key set once (key rotation).
 */
import { Buffer } from "node:buffer";
import { createHash, randomBytes } from "node:crypto";

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

const base64url = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64url");

/** A random URL-safe token (state, nonce, PKCE verifier). */
export function randomToken(bytes = 32): string {
  return base64url(randomBytes(bytes));
}

export function pkceChallenge(verifier: string): string {
  return createHash("sha256").update(verifier).digest("base64url");
}

async function getJson(url: string, init: RequestInit = {}): Promise<Record<string, unknown>> {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  const text = await response.text();
  if (!response.ok) {
    throw new OidcError(`${url} answered ${response.status}: ${text.slice(0, 200)}`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new OidcError(`${url} did not answer JSON`);
  }
}

export class OidcClient {
  readonly #discovery = new Map<string, { at: number; doc: Discovery }>();
  readonly #keys = new Map<string, { at: number; keys: JsonWebKey[] }>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  async discover(issuerUrl: string): Promise<Discovery> {
    const cached = this.#discovery.get(issuerUrl);
    if (cached && this.#now() - cached.at < CACHE_MS) return cached.doc;
    const url = `${issuerUrl.replace(/\/+$/, "")}/.well-known/openid-configuration`;
    const doc = await getJson(url);
    for (const field of ["issuer", "authorization_endpoint", "token_endpoint", "jwks_uri"]) {
      if (typeof doc[field] !== "string") {
        throw new OidcError(`The discovery document of "${issuerUrl}" lacks "${field}"`);
      }
    }
    const discovery = doc as unknown as Discovery;
    this.#discovery.set(issuerUrl, { at: this.#now(), doc: discovery });
    return discovery;
  }

  async authorizeUrl(
    provider: OidcProvider,
    redirectUri: string,
    flow: { state: string; nonce: string; verifier: string },
  ): Promise<string> {
    const { authorization_endpoint } = await this.discover(provider.issuer_url);
    const url = new URL(authorization_endpoint);
    url.searchParams.set("response_type", "code");
    url.searchParams.set("client_id", provider.client_id);
    url.searchParams.set("redirect_uri", redirectUri);
    url.searchParams.set("scope", provider.scopes);
    url.searchParams.set("state", flow.state);
    url.searchParams.set("nonce", flow.nonce);
    url.searchParams.set("code_challenge", pkceChallenge(flow.verifier));
    url.searchParams.set("code_challenge_method", "S256");
    return url.href;
  }

  /** Exchanges the code and answers the verified ID token's claims. */
  async signIn(
    provider: OidcProvider,
    redirectUri: string,
    code: string,
    flow: { nonce: string; verifier: string },
  ): Promise<Record<string, unknown>> {
    const discovery = await this.discover(provider.issuer_url);
    const form = new URLSearchParams({
      grant_type: "authorization_code",
      code,
      redirect_uri: redirectUri,
      code_verifier: flow.verifier,
      client_id: provider.client_id,
    });
    const headers: Record<string, string> = {
      "content-type": "application/x-www-form-urlencoded",
      accept: "application/json",
    };
    if (provider.client_secret) {
      // client_secret_basic: RFC 6749 2.3.1 form-encodes both parts before joining them.
      const id = encodeURIComponent(provider.client_id);
      const secret = encodeURIComponent(provider.client_secret);
      headers.authorization = `Basic ${btoa(`${id}:${secret}`)}`;
    }
    const tokens = await getJson(discovery.token_endpoint, {
      method: "POST",
      headers,
      body: form,
    });
    if (typeof tokens.id_token !== "string") {
      throw new OidcError("The token endpoint answered no id_token");
    }
    return await this.verifyIdToken(provider, discovery, tokens.id_token, flow.nonce);
  }

  async #signingKey(jwksUri: string, kid: string | undefined, refresh: boolean) {
    let entry = this.#keys.get(jwksUri);
    if (!entry || refresh || this.#now() - entry.at >= CACHE_MS) {
      const doc = await getJson(jwksUri);
      entry = { at: this.#now(), keys: Array.isArray(doc.keys) ? doc.keys as JsonWebKey[] : [] };
      this.#keys.set(jwksUri, entry);
    }
    return entry.keys.find((key) => kid === undefined || (key as { kid?: string }).kid === kid);
  }

  async verifyIdToken(
    provider: OidcProvider,
    discovery: Discovery,
    token: string,
    nonce: string,
  ): Promise<Record<string, unknown>> {
    const parts = token.split(".");
    if (parts.length !== 3) throw new OidcError("The ID token is not a JWS");
    const decode = (part: string) => JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
    const header = decode(parts[0]) as { alg?: string; kid?: string };
    const claims = decode(parts[1]) as Record<string, unknown>;
    const algorithm = header.alg === "RS256"
      ? { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }
      : header.alg === "ES256"
      ? { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" }
      : null;
    if (algorithm === null) {
      throw new OidcError(`ID token algorithm "${header.alg}" is not accepted`);
    }
    let jwk = await this.#signingKey(discovery.jwks_uri, header.kid, false);
    jwk ??= await this.#signingKey(discovery.jwks_uri, header.kid, true);
    if (!jwk) throw new OidcError(`No key "${header.kid}" in the provider's key set`);
    const signed = new TextEncoder().encode(`${parts[0]}.${parts[1]}`);
    const signature = Buffer.from(parts[2], "base64url");
    let verified: boolean;
    try {
      // A header naming another algorithm than the key's type fails here: a refusal, not a 500.
      const key = await crypto.subtle.importKey("jwk", jwk, algorithm, false, ["verify"]);
      verified = await crypto.subtle.verify(algorithm, key, signature, signed);
    } catch (err) {
      throw new OidcError(`The ID token's key does not fit "${header.alg}": ${err}`);
    }
    if (!verified) {
      throw new OidcError("The ID token's signature does not verify");
    }
    const now = this.#now() / 1000;
    const audience = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (claims.iss !== discovery.issuer) {
      throw new OidcError(`ID token issuer "${claims.iss}" is not "${discovery.issuer}"`);
    }
    if (!audience.includes(provider.client_id)) {
      throw new OidcError("The ID token is not for this client");
    }
    if (typeof claims.exp !== "number" || claims.exp + CLOCK_SKEW_SECS < now) {
      throw new OidcError("The ID token has expired");
    }
    if (claims.nonce !== nonce) throw new OidcError("The ID token's nonce does not match");
    if (typeof claims.sub !== "string" || claims.sub === "") {
      throw new OidcError("The ID token has no subject");
    }
    return claims;
  }
}
