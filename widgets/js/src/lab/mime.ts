/**
 * The MIME renderer extension: `application/vnd.agentcell.turn+json` in JupyterLab and Notebook 7. Ranked
 * before HTML and Markdown, so a saved turn shows as the widget did, while every other viewer reads the
 * bundle's text/html or text/markdown.
 */

import type { IRenderMime } from "@jupyterlab/rendermime-interfaces";
import { Widget } from "@lumino/widgets";
import { ensureStyle } from "./style";
import { TURN_MIMETYPE, isTurnBundle, withImages } from "./bundle";
import { renderTurn } from "./render";

class TurnOutput extends Widget implements IRenderMime.IRenderer {
  constructor(private readonly mimeType: string) {
    super();
    this.addClass("agentcell-mime");
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const data = model.data[this.mimeType];
    if (isTurnBundle(data)) {
      renderTurn(this.node, withImages(data, model.data["text/html"]));
    } else {
      this.node.textContent = "agentcell: this output holds no turn events";
    }
    return Promise.resolve();
  }
}

export const rendererFactory: IRenderMime.IRendererFactory = {
  // The view renders Markdown through DOMPurify and builds everything else as text nodes.
  safe: true,
  mimeTypes: [TURN_MIMETYPE],
  defaultRank: 10,
  createRenderer: (options) => {
    ensureStyle();
    return new TurnOutput(options.mimeType);
  },
};

const extension: IRenderMime.IExtension = {
  id: "agentcell-widgets:turn",
  rendererFactory,
  rank: 10,
  dataType: "json",
};

export default extension;
