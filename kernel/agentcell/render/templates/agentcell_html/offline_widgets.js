// Renders the page's anywidget views from the widget state saved in it, with no widget manager and nothing
// fetched: an anywidget carries its own ES module and CSS in its state (_esm, _css), so the page imports
// that module from a blob and hands it a model that reads the saved state. Nothing goes back to a kernel:
// the model's send, set and save_changes do nothing. A view that cannot render keeps its static fallback.
const saved = document.querySelector('script[type="application/vnd.jupyter.widget-state+json"]');
const models = saved ? JSON.parse(saved.textContent).state : {};
const modules = new Map();
const styles = new Set();

function importModule(source) {
  if (!modules.has(source)) {
    const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
    modules.set(source, import(url));
  }
  return modules.get(source);
}

function savedModel(state) {
  return {
    get: (key) => state[key],
    set: () => {},
    on: () => {},
    off: () => {},
    send: () => {},
    save_changes: () => {},
  };
}

for (const view of document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]')) {
  const entry = models[JSON.parse(view.textContent).model_id];
  const state = entry && entry.model_module === "anywidget" ? entry.state : null;
  if (!state || typeof state._esm !== "string") continue;
  if (typeof state._css === "string" && !styles.has(state._css)) {
    styles.add(state._css);
    const style = document.createElement("style");
    style.textContent = state._css;
    document.head.append(style);
  }
  const el = document.createElement("div");
  view.after(el);
  try {
    const loaded = await importModule(state._esm);
    const widget = typeof loaded.default === "function" ? await loaded.default() : loaded.default;
    const model = savedModel(state);
    await widget.initialize?.({ model });
    await widget.render({ model, el });
    // The widget's repr (text/plain) follows its view in this page; the rendered view replaces it.
    const plain = view.parentElement.nextElementSibling;
    if (plain && plain.dataset.mimeType === "text/plain") plain.style.display = "none";
  } catch (error) {
    el.remove();
    console.warn("agentcell: a saved widget could not render; its static fallback stays", error);
  }
}
