/**
 * A turn's look in JupyterLab / Notebook 7: the widget's stylesheet and the lab's own. KaTeX is not in it:
 * its chunk (`../math_part.ts`) loads, with its styles, the first time a turn has math.
 */

import css from "../style.css";
import { injectStyle } from "../inject_style";
import { setMathLoader } from "../math";
import extra from "./lab.css";

export function ensureStyle(): void {
  injectStyle("turn", `${css}\n${extra}`);
  setMathLoader(() => import("../math_part").then((math) => math.default));
}
