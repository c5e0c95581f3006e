/**
 * Injects a stylesheet carried as text, once into the page. The MIME renderer's bundle, the
 * plugins' bundle and the widget's loader are built apart, so "once" is kept in the page (a marked <style>).
 */
export function injectStyle(key: string, text: string): void {
  if (typeof document === "undefined" || document.head.querySelector(`style[data-agentcell="${key}"]`)) return;
  const style = document.createElement("style");
  style.dataset.agentcell = key;
  style.textContent = text;
  document.head.append(style);
}
