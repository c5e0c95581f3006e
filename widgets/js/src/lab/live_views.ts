/**
 * Lends the live widget the extension's copy of the views: a turn's widget carries only a loader
 * (`../loader.ts`), which takes the `turn` part from here, so the kernel never sends it to this page. A
 * plugin, not a side effect of loading the bundle: JupyterLab loads a disabled extension's code too, and
 * there the loader must ask the kernel.
 */

import type { JupyterFrontEndPlugin } from "@jupyterlab/application";
import { provide } from "../code_parts";
import widget from "../widget";
import { ensureStyle } from "./style";

export const liveViewsPlugin: JupyterFrontEndPlugin<void> = {
  id: "agentcell-widgets:live-views",
  description: "Lends the live turn widget the extension's views, so the kernel does not send them.",
  autoStart: true,
  activate: () => {
    // Without a math loader of its own: ensureStyle set the lab's KaTeX chunk.
    provide("turn", async () => {
      ensureStyle();
      return { default: widget };
    });
  },
};
