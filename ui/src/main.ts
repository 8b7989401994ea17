/** Entry: styles, the theme, then the app into #app; any uncaught error is shown in words. */
import "./styles.css";
import "uplot/dist/uPlot.min.css";
import { render } from "preact";
import { App } from "./app.ts";
import { html } from "./html.ts";
import { applyTheme } from "./theme.ts";

applyTheme();
const root = document.getElementById("app")!;
root.textContent = "";
render(html`<${App} />`, root);

function report(message: string) {
  const bar = document.getElementById("fatal") ?? document.createElement("p");
  bar.id = "fatal";
  bar.className = "error fatal";
  bar.setAttribute("role", "alert");
  bar.textContent = `Something went wrong in the console: ${message}. Reload the page to retry.`;
  document.body.prepend(bar);
}
addEventListener("error", (event) => report(event.message));
addEventListener(
  "unhandledrejection",
  (event) => report(String(event.reason?.message ?? event.reason)),
);
