/**
 * A tiny OpenID Connect provider for black-box tests, on a loopback port: discovery, a JWKS, an
 * authorize endpoint that signs in whoever `user` is at once (no login page), and a token endpoint
 * that checks the code, the redirect URI, the client secret (Basic) and the PKCE verifier before it
 * answers an RS256 ID token carrying the nonce and `email_verified: true` unless `user` says
 * otherwise. `forgeSignature` signs with a key not in the JWKS; `headerAlg` names another algorithm
 * in the token's header than the RSA key it is signed with; `tokenClaims` are merged last into the
 * ID token's claims (`undefined` drops one); `callbackIss` is sent as the RFC 9207 `iss` of the
 * authorization response, which discovery announces when `announceIss`; `discoveryIssuer` is the
 * issuer the discovery document names (default: the real one).
 */
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";

export interface FakeIdp extends AsyncDisposable {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Who the next authorization signs in. */
  user: Record<string, unknown>;
  forgeSignature: boolean;
  /** The `alg` the ID token's header names (default RS256, what it is signed with). */
  headerAlg: string;
  tokenClaims: Record<string, unknown>;
  callbackIss?: string;
  announceIss: boolean;
  discoveryIssuer?: string;
  /** Token requests refused so far, with the reason. */
  refusals: string[];
}

const b64url = (data: Uint8Array | string) => Buffer.from(data).toString("base64url");

async function rsaKey() {
  return await crypto.subtle.generateKey(
    {
      name: "RSASSA-PKCS1-v1_5",
      modulusLength: 2048,
      publicExponent: new Uint8Array([1, 0, 1]),
      hash: "SHA-256",
    },
    true,
    ["sign", "verify"],
  ) as CryptoKeyPair;
}

export async function startFakeIdp(): Promise<FakeIdp> {
  const good = await rsaKey();
  const forged = await rsaKey();
  const jwk = { ...(await crypto.subtle.exportKey("jwk", good.publicKey)), kid: "k1", use: "sig" };
  const codes = new Map<
    string,
    { nonce: string; challenge: string; redirectUri: string; user: Record<string, unknown> }
  >();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const url = new URL(req.url);
    switch (url.pathname) {
      case "/.well-known/openid-configuration":
        return Response.json({
          issuer: idp.discoveryIssuer ?? idp.issuer,
          authorization_response_iss_parameter_supported: idp.announceIss,
          authorization_endpoint: `${idp.issuer}/authorize`,
          token_endpoint: `${idp.issuer}/token`,
          jwks_uri: `${idp.issuer}/jwks`,
        });
      case "/jwks":
        return Response.json({ keys: [jwk] });
      case "/authorize": {
        const p = url.searchParams;
        if (p.get("client_id") !== idp.clientId || p.get("code_challenge_method") !== "S256") {
          return new Response("bad authorize request", { status: 400 });
        }
        const code = crypto.randomUUID();
        codes.set(code, {
          nonce: p.get("nonce") ?? "",
          challenge: p.get("code_challenge") ?? "",
          redirectUri: p.get("redirect_uri") ?? "",
          user: { ...idp.user },
        });
        const back = new URL(p.get("redirect_uri")!);
        back.searchParams.set("code", code);
        back.searchParams.set("state", p.get("state") ?? "");
        if (idp.callbackIss !== undefined) back.searchParams.set("iss", idp.callbackIss);
        return Response.redirect(back.href, 302);
      }
      case "/token": {
        const form = new URLSearchParams(await req.text());
        const grant = codes.get(form.get("code") ?? "");
        codes.delete(form.get("code") ?? "");
        // RFC 6749 2.3.1: both parts are form-encoded before they are joined.
        const [id, secret] = atob(
          (req.headers.get("authorization") ?? "").replace(/^Basic /, ""),
        ).split(":").map((part) => decodeURIComponent(part.replaceAll("+", " ")));
        const verifier = form.get("code_verifier") ?? "";
        const refusal = !grant
          ? "unknown code"
          : id !== idp.clientId || secret !== idp.clientSecret
          ? "client authentication"
          : form.get("redirect_uri") !== grant.redirectUri
          ? "redirect_uri"
          : createHash("sha256").update(verifier).digest("base64url") !== grant.challenge
          ? "pkce"
          : null;
        if (refusal !== null) {
          idp.refusals.push(refusal);
          return Response.json({ error: "invalid_grant" }, { status: 400 });
        }
        const now = Math.floor(Date.now() / 1000);
        const header = b64url(JSON.stringify({ alg: idp.headerAlg, kid: "k1", typ: "JWT" }));
        const claims = b64url(JSON.stringify({
          iss: idp.issuer,
          aud: idp.clientId,
          iat: now,
          exp: now + 300,
          nonce: grant!.nonce,
          ...(typeof grant!.user.email === "string" ? { email_verified: true } : {}),
          ...grant!.user,
          ...idp.tokenClaims,
        }));
        const signature = await crypto.subtle.sign(
          "RSASSA-PKCS1-v1_5",
          (idp.forgeSignature ? forged : good).privateKey,
          new TextEncoder().encode(`${header}.${claims}`),
        );
        return Response.json({
          access_token: "opaque",
          token_type: "Bearer",
          id_token: `${header}.${claims}.${b64url(new Uint8Array(signature))}`,
        });
      }
    }
    return new Response("not found", { status: 404 });
  });
  const idp: FakeIdp = {
    issuer: `http://127.0.0.1:${server.addr.port}`,
    clientId: "svc-admin",
    clientSecret: "fake-client-secret",
    user: { sub: "nobody" },
    forgeSignature: false,
    headerAlg: "RS256",
    tokenClaims: {},
    announceIss: false,
    refusals: [],
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
  return idp;
}
