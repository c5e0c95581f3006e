/** The widget's stylesheet, injected once into the page (the lab bundle carries it as text). */

import css from "../style.css";
import extra from "./lab.css";

let injected = false;

export function ensureStyle(): void {
  if (injected || typeof document === "undefined") return;
  injected = true;
  const style = document.createElement("style");
  style.dataset.agentcell = "turn";
  style.textContent = `${css}\n${extra}`;
  document.head.append(style);
}
