// Draws each finished turn of the page with the turn widget's own views (carried once per page, base64, in
// #agentcell-turn-module, with their styles), from the bundle saved beside its HTML fallback: nothing
// fetched, nothing sent. KaTeX (#agentcell-math-module, there when a turn may have math) is evaluated only
// when a turn's Markdown has math.
{
  const text = (id) => new TextDecoder().decode(Uint8Array.from(atob(document.getElementById(id).textContent.trim()), (c) => c.charCodeAt(0)));
  const load = (id) => import(URL.createObjectURL(new Blob([text(id)], { type: "text/javascript" })));
  const turn = await load("agentcell-turn-module");
  if (document.getElementById("agentcell-math-module")) {
    turn.setMathLoader(() => load("agentcell-math-module").then((math) => math.default));
  }
  const widget = turn.default;
  for (const saved of document.querySelectorAll('script[type="application/vnd.agentcell.turn+json"]')) {
    try {
      const bundle = JSON.parse(saved.textContent);
      const output = saved.closest(".jp-OutputArea-child");
      sharedImages(bundle, output);
      // The widget's items: context, events, each approval request right after its call (lab/bundle.ts).
      const asked = new Map((bundle.approvals || []).map((a) => [a.tool_use_id, a]));
      const items = bundle.context ? [bundle.context] : [];
      for (const event of bundle.events || []) {
        items.push(event);
        if (asked.has(event.id)) items.push(asked.get(event.id));
      }
      const model = { get: (key) => (key === "items" ? items : undefined), set() {}, on() {}, off() {}, send() {}, save_changes() {} };
      const child = document.createElement("div");
      child.className = "jp-OutputArea-child agentcell-offline-turn";
      const el = document.createElement("div");
      child.append(el);
      widget.initialize?.({ model });
      widget.render({ model, el });
      output.before(child);
      output.style.display = "none";
    } catch (error) {
      console.warn("agentcell: a saved turn could not render; its static fallback stays", error);
    }
  }
}

// The bundle keeps one copy of a tool's image, in its HTML fallback, and its event says so (`in`:
// "text/html"; render/renderer.py, lab/bundle.ts's withImages): take the data from the fallback's <img>.
function sharedImages(bundle, output) {
  for (const event of bundle.events || []) {
    if (event.type !== "agent.tool_result" || !Array.isArray(event.content)) continue;
    event.content.forEach((block, index) => {
      if (!block.source || block.source.in !== "text/html") return;
      const img = output.querySelector(`img[data-image="${CSS.escape(`${event.tool_use_id}/${index}`)}"]`);
      const src = img ? img.getAttribute("src") || "" : "";
      block.source = { type: block.source.type, media_type: block.source.media_type, data: src.slice(src.indexOf(",") + 1) };
    });
  }
}
