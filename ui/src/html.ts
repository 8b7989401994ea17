/** `html` tagged templates (htm) bound to Preact: components without a JSX compile step. */
export { html } from "htm/preact";
