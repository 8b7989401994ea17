/** `html` tagged templates (htm) bound to Preact: components without a JSX compile step. */
import { h } from "preact";
import htm from "htm";

export const html = htm.bind(h);
