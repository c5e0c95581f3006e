/** KaTeX, in a part of its own that loads the first time a turn has math: sent by the kernel to a live
 * widget (`code_parts.ts`), a chunk of the lab extension (`lab/style.ts`), a script of the `--html` page. Its
 * stylesheet comes with it, fonts inlined (build.mjs), marked "math" so a page holds it once. */

import katex from "katex";
import css from "katex/dist/katex.min.css";
import { injectStyle } from "./inject_style";

injectStyle("math", css);

export default katex;
