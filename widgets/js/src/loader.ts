/**
 * The `_esm` every turn's widget carries: a few hundred bytes that find the widget's real code in the page
 * (the lab extension's copy, or one an earlier turn fetched) or ask the kernel for it once (`code_parts.ts`),
 * then hand the model and element to it. The kernel sends KaTeX only when a reply has math.
 *
 * anywidget gives `initialize` two seconds, so it only asks; `render` draws once the code is here. Batches
 * that came before are not lost: the real view says `hello` with what it has and the kernel sends the rest
 * (widget.ts).
 */

import type { InitializeProps, RenderProps } from "@anywidget/types";
import { part } from "./code_parts";

function initialize(props: InitializeProps): void {
  part("turn", props.model)
    .then((turn) => turn.default.initialize?.(props))
    .catch(() => undefined); // render says so if it failed
}

function render(props: RenderProps): () => void {
  const { model, el } = props;
  let disposed = false;
  let cleanup: (() => unknown) | undefined;
  part("turn", model, { join: true }) // the question initialize asked
    .then(async (turn) => {
      if (disposed) return;
      // The math part comes through this view's model: the one the kernel still answers.
      turn.setMathLoader?.(() => part("math", model).then((math) => math.default));
      const done = await turn.default.render(props);
      if (typeof done === "function") {
        const dispose = done as () => unknown;
        if (disposed) void dispose();
        else cleanup = dispose;
      }
    })
    .catch((error: unknown) => {
      el.textContent = "agentcell: the live view could not load (the transcript follows the turn)";
      console.warn(error);
    });
  return () => {
    disposed = true;
    void cleanup?.();
  };
}

export default { initialize, render };
