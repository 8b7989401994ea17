/** Rows of the session routes: logins, the session, the password, browse credentials, OIDC. */
import { ref } from "./components.ts";
import { keyPairBody, migrateBody, passwordBody, passwordChangeBody } from "./described-bodies.ts";
import { area, type RouteSpec } from "./route-spec.ts";

const session = area("Session");
const loginAnswer = "`{ok, user, admin_gui, expires_at}`; sets the session cookie.";

export const SESSION_ROUTES: RouteSpec[] = [
  session.post("/login", "Log in with the bootstrap password", {
    access: "public",
    body: passwordBody,
    returns: loginAnswer,
    description: "Rate-limited per client address (429 with `retry_after_secs`).",
  }),
  session.post("/login-as", "Log in as an IAM user (its key pair)", {
    access: "public",
    body: keyPairBody,
    returns: loginAnswer + " A user without `admin` on `*` gets 403 naming browser-connect.",
  }),
  session.post("/logout", "End the session", { access: "browse", response: ref("Ok") }),
  session.get("/session", "Whether the request's session is valid", {
    access: "public",
    returns: "`{valid, admin_gui}`.",
  }),
  session.put("/password", "Change the bootstrap password", {
    body: passwordChangeBody,
    returns: "`{ok, expires_at}`: every other session ends; this one is renewed.",
  }),
  session.post("/recover-db", "Reopen a config database the password hash no longer opens", {
    access: "public",
    body: passwordBody,
    returns: "`{ok, aside_path}`: the old database is moved aside.",
  }),
  session.post("/migrate", "Turn the bootstrap key pair into an IAM user", {
    body: migrateBody,
    returns: "`{migrated: true, user: {id, name, access_key_id}, next_step}`.",
  }),
  session.post("/session/browser-connect", "Open a browse session with an IAM key pair", {
    access: "public",
    body: keyPairBody,
    returns: loginAnswer,
  }),
  session.post("/session/open-browser-connect", "Open a browse session (authentication none)", {
    access: "public",
    returns: loginAnswer,
  }),
  session.get("/session/s3-credentials", "The key pair stored for this session", {
    access: "browse",
    returns: "`{stored: false}` or `{stored: true, access_key_id, secret_access_key}`.",
  }),
  session.put("/session/s3-credentials", "Store a key pair for this session", {
    access: "browse",
    body: keyPairBody,
    returns: "`{stored: true, access_key_id}`.",
  }),
  session.delete("/session/s3-credentials", "Forget this session's key pair", {
    access: "browse",
    returns: "`{stored: false, removed}`.",
  }),
  session.get("/oauth/authorize/:provider", "Start an OIDC login", {
    access: "public",
    params: { provider: "The login provider's name." },
    status: 302,
    returns: "A redirect to the provider.",
  }),
  session.get("/oauth/callback", "Finish an OIDC login", {
    access: "public",
    query: { state: "The flow's state.", code: "The authorization code.", error: "A refusal." },
    produces: "text/html",
    returns: "A small page that moves to the console (the session cookie set on success).",
  }),
  session.get("/_/api/whoami", "Who the session is, the access mode and the version", {
    access: "public",
    returns: "`{mode, version, user, external_providers}` (user null without a session).",
  }),
];
