/**
 * Paints a saved turn with the widget's own fold and view: no kernel, no widget state. The view's buttons
 * (Stop, Allow/Deny) never show, because a finished turn's state is not live; clicks have no one to reach.
 */

import { fold } from "../fold";
import { h } from "../view/dom";
import { TurnView } from "../view/turn";
import { STALE_NOTE, type TurnBundle, bundleItems } from "./bundle";

export function renderTurn(host: HTMLElement, bundle: TurnBundle): TurnView {
  host.replaceChildren();
  if (bundle.stale) host.append(h("div", { class: "ac-stale" }, `Stale: ${STALE_NOTE}`));
  const view = new TurnView(host, () => undefined);
  view.paint(fold(bundleItems(bundle)));
  view.el.classList.toggle("ac-stale-turn", bundle.stale === true);
  return view;
}
