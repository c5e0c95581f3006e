/**
 * A saved turn's look: the widget's stylesheet after KaTeX's own (its fonts inlined by build.mjs), so its
 * math is typeset as the live widget's.
 */

import katexCss from "katex/dist/katex.min.css";
import css from "../style.css";
import { injectStyle } from "./inject_style";
import extra from "./lab.css";

export function ensureStyle(): void {
  injectStyle("turn", `${katexCss}\n${css}\n${extra}`);
}
