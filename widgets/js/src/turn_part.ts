/** The `turn` part the kernel sends a live widget once per page (`code_parts.ts`): the anywidget entry, its
 * stylesheet, and the seam through which the loader says where KaTeX is. */

import { injectStyle } from "./inject_style";
import css from "./style.css";

injectStyle("turn", css);

export { setMathLoader } from "./math";
export { default } from "./widget";
