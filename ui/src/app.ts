/**
 * The shell: finds out who is logged in, shows the login page or the console (navigation,
 * the page, logout, theme), and returns to the login page with a message when a call finds the
 * session gone.
 */
import { useEffect, useState } from "preact/hooks";
import { call, describe, onSessionExpired } from "./api.ts";
import { html } from "./html.ts";
import { linkClick, navigate, useRoute } from "./router.ts";
import { applyTheme, currentTheme, nextTheme } from "./theme.ts";
import { LoginPage } from "./pages/login.ts";
import { BrowsePage } from "./pages/browse.ts";
import { PAGES } from "./pages/index.ts";
import { ErrorText } from "./widgets.ts";

export interface Session {
  user: string;
  admin: boolean;
}

async function whoami(): Promise<Session | null> {
  // Both at once: the first page waits on this.
  const [who, session] = await Promise.all([
    call<{ user: string | null }>("/_/api/whoami", { login: true }),
    call<{ valid: boolean; admin_gui: boolean }>("session", { login: true }),
  ]);
  return who.user && session.valid ? { user: who.user, admin: session.admin_gui } : null;
}

export function App() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [message, setMessage] = useState<string | null>(null);
  const [bootError, setBootError] = useState<string | null>(null);
  const route = useRoute();

  useEffect(() => {
    onSessionExpired((text) => {
      setSession(null);
      setMessage(text);
    });
    whoami().then(setSession, (err) => {
      setBootError(describe(err));
      setSession(null);
    });
  }, []);

  if (session === undefined) return html`<p class="loading">Loading…</p>`;
  if (session === null) {
    return html`
      <${LoginPage}
        message=${message ?? bootError}
        onLogin=${(s: Session) => {
          setMessage(null);
          setSession(s);
          const page = route.segments[0];
          if (!page || page === "login") navigate(s.admin ? "/_/dashboard" : "/_/browse", true);
        }}
      />
    `;
  }
  return html`<${Shell} session=${session} onLogout=${(text: string) => {
    setSession(null);
    setMessage(text);
    navigate("/_/login", true);
  }} />`;
}

function Shell({ session, onLogout }: { session: Session; onLogout: (m: string) => void }) {
  const route = useRoute();
  const [theme, setTheme] = useState(currentTheme());
  const [menu, setMenu] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const pages = PAGES.filter((p) => session.admin || !p.admin);
  let name = route.segments[0] ?? "";
  if (!name || name === "login") name = session.admin ? "dashboard" : "browse";
  const page = name === "browse" ? null : pages.find((p) => p.name === name);
  const logout = async () => {
    try {
      await call("logout", { method: "POST" });
      onLogout("You are logged out.");
    } catch (err) {
      setError(describe(err));
    }
  };
  const content = name === "browse"
    ? html`<${BrowsePage} segments=${route.segments.slice(1)} session=${session} />`
    : page
    ? html`<${page.component} segments=${route.segments.slice(1)} session=${session} />`
    : html`<p class="error" role="alert">There is no page "${name}" for you here.</p>`;
  return html`
    <div class="shell">
      <header class="top">
        <a class="skip" href="#main">Skip to content</a>
        <button class="menu-toggle" aria-expanded=${menu} onClick=${() =>
          setMenu(!menu)}>Menu</button>
        <strong class="brand">svc</strong>
        <span class="spacer"></span>
        <span class="who" title="Logged in as">${session.user}${session.admin
          ? ""
          : " (browse)"}</span>
        <button
          class="ghost"
          title="Colour theme"
          onClick=${() => {
            const next = nextTheme(theme);
            applyTheme(next);
            setTheme(next);
          }}
        >Theme: ${theme}</button>
        <button class="ghost" onClick=${logout}>Log out</button>
      </header>
      <nav class=${menu ? "side open" : "side"} aria-label="Pages">
          <a href="/_/browse" onClick=${linkClick} aria-current=${name === "browse"
            ? "page"
            : undefined}
            >Objects</a>
          ${pages.map((p) =>
            html`<a href=${"/_/" + p.name} onClick=${(e: MouseEvent) => {
              setMenu(false);
              linkClick(e);
            }} aria-current=${name === p.name ? "page" : undefined}>${p.title}</a>`
          )}
        </nav>
      <main id="main" tabindex="-1">
          <${ErrorText} error=${error} />
          ${content}
        </main>
    </div>
  `;
}
