/**
 * Injects a stylesheet the lab bundles carry as text, once into the page. The MIME renderer's bundle and the
 * plugins' bundle are built apart, so "once" is kept in the page (a marked <style>), not in a module.
 */
export function injectStyle(key: string, text: string): void {
  if (typeof document === "undefined" || document.head.querySelector(`style[data-agentcell="${key}"]`)) return;
  const style = document.createElement("style");
  style.dataset.agentcell = key;
  style.textContent = text;
  document.head.append(style);
}
