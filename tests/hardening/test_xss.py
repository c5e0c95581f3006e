"""XSS: 44 hostile payloads in a turn run no script and load no URL, live, saved and in every fallback, in Chromium.

A scripted model thinks, calls the python tool and answers with every payload of the corpus (each after
a visible marker ``XSS-n:``), so they reach the model's text, its thinking, a tool's input and a tool's
output. Each payload that gets to run or load anything asks for ``/pwned/n`` (same-origin, as
``![x](/logout)`` did) or ``http://127.0.0.1:9/pwned/n`` (remote). The turn is rendered, in one shared
JupyterLab server and one browser, as the live widget, as the saved view of the executed notebook (the
MIME renderer), as its text/html and text/markdown fallbacks alone (what a viewer without the extension
shows), and as the HTML page of ``agentcell run --html``, with and without JavaScript. On every surface
each payload's marker is shown (the payload was rendered, not dropped), no request names it, and the
rendered turn holds no script, frame, event-handler attribute or ``javascript:`` URL.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import Browser, Page, expect

from ..browser.conftest import browser, lab_env  # noqa: F401 - one Chromium for the family, a fixture here
from ..browser.lab import Lab, open_notebook, run_cell, run_lab, turn, wait_cell_done, write_notebook
from .kernel_session import kernel_environment

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

JS = "fetch('http://127.0.0.1:9/pwned/{n}')"
SAME = "/pwned/{n}"
REMOTE = "http://127.0.0.1:9/pwned/{n}"
CORPUS = [
    "<script>" + JS + "</script>",
    '<img src=x onerror="' + JS + '">',
    '<svg onload="' + JS + '"></svg>',
    "<svg><script>" + JS + "</script></svg>",
    '<iframe src="javascript:' + JS + '"></iframe>',
    '<iframe srcdoc="<script>parent.' + JS + '</script>"></iframe>',
    "[click](javascript:" + JS + ")",
    "![same-origin](" + SAME + ")",
    "![remote](" + REMOTE + ")",
    '<img src="' + SAME + '">',
    '<a href="javascript:' + JS + '">link</a>',
    '<body onload="' + JS + '">',
    '<input autofocus onfocus="' + JS + '">',
    '<details open ontoggle="' + JS + '"><summary>s</summary></details>',
    '<video><source onerror="' + JS + '"></video>',
    '<audio src=x onerror="' + JS + '"></audio>',
    '<object data="javascript:' + JS + '"></object>',
    '<embed src="javascript:' + JS + '">',
    '<math><mtext><table><mglyph><style><img src=x onerror="' + JS + '"></style></mglyph></table></mtext></math>',
    "<style>@import '" + SAME + "';</style>",
    '<div style="background:url(' + SAME + ')">styled</div>',
    '<link rel=stylesheet href="' + SAME + '">',
    '<meta http-equiv="refresh" content="0;url=javascript:' + JS + '">',
    '<base href="' + REMOTE + '/">',
    '<form action="javascript:' + JS + '"><button>go</button></form>',
    '<marquee onstart="' + JS + '">m</marquee>',
    '<noscript><p title="</noscript><img src=x onerror=' + JS + '>"></p></noscript>',
    '<!--<img src="--><img src=x onerror="' + JS + '">',
    '<a href="data:text/html,<script>' + JS + '</script>">data link</a>',
    "`<img src=x onerror=" + JS + ">`",
    "```html\n<script>" + JS + "</script>\n```",
    "$\\href{javascript:" + JS + "}{tex link}$",
    "<img src=x onerror=\"&#102;&#101;&#116;&#99;&#104;('" + REMOTE + "')\">",
    "<scr<script>ipt>" + JS + "</script>",
    "<IMG SRC=JaVaScRiPt:" + JS + ">",
    '<svg><a xlink:href="javascript:' + JS + '"><text x="1" y="10">svg link</text></a></svg>',
    '<svg><animate onbegin="' + JS + '" attributeName="x" dur="1s"></animate></svg>',
    '<img srcset="' + SAME + ' 1x">',
    '<picture><source srcset="' + SAME + '"><img alt="p"></picture>',
    '<template><img src=x onerror="' + JS + '"></template>',
    "![ref][r{n}]\n\n[r{n}]: " + SAME,
    "<" + REMOTE + ">",
    '<x onclick="' + JS + '" style="position:fixed;inset:0">overlay</x>',
    '<a href="' + SAME + '" ping="' + REMOTE + '">pinged</a>',
]
SURFACES = ["live-widget", "saved-view", "html-fallback-in-lab", "markdown-fallback-in-lab", "html-page", "page-no-js"]
# What no rendered turn may hold: anything that runs script or loads a page of its own.
VIOLATIONS = """(root) => Array.from(root.querySelectorAll('*')).flatMap((el) => {
  const bad = [];
  const tags = ['SCRIPT', 'IFRAME', 'OBJECT', 'EMBED', 'BASE', 'META', 'FORM', 'LINK'];
  if (tags.includes(el.tagName)) bad.push(el.tagName);
  for (const a of el.attributes) {
    if (a.name.startsWith('on')) bad.push(el.tagName + '[' + a.name + ']');
    const runs = /^\\s*(javascript|vbscript|data:text\\/html)/i.test(a.value) && a.name !== 'title';
    if (runs) bad.push(el.tagName + '[' + a.name + '=' + a.value.slice(0, 30) + ']');
  }
  return bad;
})"""


def hostile_text() -> str:
    return "\n\n".join(f"XSS-{n}: {payload.replace('{n}', str(n))}" for n, payload in enumerate(CORPUS))


@dataclass
class Surface:
    text: str = ""
    requests: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)


def _watch(page: Page) -> list[str]:
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url) if "pwned" in request.url else None)
    return asked


def _look(page: Page, selector: str, asked: list[str]) -> Surface:
    roots = page.locator(selector)
    expect(roots.first).to_be_visible(timeout=60_000)
    page.wait_for_load_state("networkidle")
    text = "\n".join(roots.nth(i).inner_text() for i in range(roots.count()))
    violations = [v for i in range(roots.count()) for v in roots.nth(i).evaluate(VIOLATIONS)]
    return Surface(text, list(asked), violations)


def _fallback_notebook(executed: Path, target: Path, keep: Callable[[str], bool]) -> None:
    notebook = nbformat.read(executed, as_version=4)
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if "data" in output:
                output["data"] = {k: v for k, v in output["data"].items() if keep(k)}
    notebook.metadata.pop("widgets", None)
    nbformat.write(notebook, target)


@pytest.fixture(scope="module")
def surfaces(browser: Browser, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Surface]:  # noqa: F811
    base = tmp_path_factory.mktemp("xss")
    script = base / "hostile.json"
    code = "print(" + json.dumps(hostile_text()) + ")"
    script.write_text(
        json.dumps(
            [
                {"steps": [{"kind": "thinking", "thinking": hostile_text()},
                           {"kind": "tool_call", "name": "python", "input": {"code": code}}]},
                {"steps": [{"kind": "text", "text": hostile_text()}]},
            ]
        )
    )  # fmt: skip
    model, prompt = f"%model scripted:{script}", "Say every nasty thing you know."
    # The saved notebook and its HTML page, as `agentcell run --html` writes them.
    folder = base / "run"
    folder.mkdir()
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "agentcell", "display_name": "agentcell", "language": "markdown"}
    notebook.cells = [nbformat.v4.new_code_cell(model), nbformat.v4.new_code_cell(prompt)]
    nbformat.write(notebook, folder / "hostile.ipynb")
    env = kernel_environment(base)
    env.pop("JPY_SESSION_NAME")
    done = subprocess.run(
        [sys.executable, "-m", "agentcell.cli", "run", str(folder / "hostile.ipynb"), "--html"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    executed, page_file = folder / "hostile.executed.ipynb", folder / "hostile.executed.html"
    found: dict[str, Surface] = {}
    lab_base = base / "lab"
    with run_lab(lab_base, env=lab_env(lab_base)) as lab:
        found["live-widget"] = _live(browser, lab, model, prompt)
        shutil.copy(executed, lab.root / "saved.ipynb")
        _fallback_notebook(executed, lab.root / "html.ipynb", lambda k: k in ("text/html", "text/plain"))
        _fallback_notebook(executed, lab.root / "markdown.ipynb", lambda k: k in ("text/markdown", "text/plain"))
        for surface, name, selector in [
            ("saved-view", "saved.ipynb", ".agentcell-turn"),
            ("html-fallback-in-lab", "html.ipynb", ".jp-Cell:nth-child(2) .jp-OutputArea-output"),
            ("markdown-fallback-in-lab", "markdown.ipynb", ".jp-Cell:nth-child(2) .jp-OutputArea-output"),
        ]:
            found[surface] = _in_lab(browser, lab, name, selector)
    for surface, javascript in [("html-page", True), ("page-no-js", False)]:
        context = browser.new_context(java_script_enabled=javascript)
        try:
            page = context.new_page()
            asked = _watch(page)
            page.goto(page_file.as_uri())
            found[surface] = _look(page, ".agentcell-turn" if javascript else ".agentcell-fallback", asked)
        finally:
            context.close()
    return found


def _live(browser: Browser, lab: Lab, model: str, prompt: str) -> Surface:  # noqa: F811
    context = browser.new_context(viewport={"width": 1200, "height": 1000})
    try:
        page = context.new_page()
        asked = _watch(page)
        write_notebook(lab, "live.ipynb", [model, prompt])
        open_notebook(page, lab, "live.ipynb")
        run_cell(page, 0)
        wait_cell_done(page, 0)
        run_cell(page, 1)
        wait_cell_done(page, 1)
        expect(turn(page, 1).locator(".ac-turn-status")).to_have_text("done", timeout=60_000)
        for toggle in turn(page, 1).locator("details:not([open]) > summary").all():
            toggle.click()  # open the thinking and the tool card, so their payloads render too
        return _look(page, ".jp-Cell:nth-child(2) .agentcell-turn", asked)
    finally:
        context.close()


def _in_lab(browser: Browser, lab: Lab, name: str, selector: str) -> Surface:  # noqa: F811
    context = browser.new_context(viewport={"width": 1200, "height": 1000})
    try:
        page = context.new_page()
        asked = _watch(page)
        open_notebook(page, lab, name)
        for toggle in page.locator(f"{selector} details:not([open]) > summary").all():
            toggle.click()
        return _look(page, selector, asked)
    finally:
        context.close()


def test_the_corpus_has_at_least_40_payloads() -> None:
    assert len(CORPUS) >= 40


@pytest.mark.parametrize("surface", SURFACES)
def test_no_rendered_turn_holds_a_script_a_frame_a_handler_or_a_javascript_url(
    surfaces: dict[str, Surface], surface: str
) -> None:
    assert surfaces[surface].violations == []


@pytest.mark.parametrize("n", range(len(CORPUS)))
@pytest.mark.parametrize("surface", SURFACES)
def test_a_payload_is_shown_and_neither_runs_nor_loads_anything(
    surfaces: dict[str, Surface], surface: str, n: int
) -> None:
    seen = surfaces[surface]
    assert f"XSS-{n}:" in seen.text, f"payload {n} was dropped from {surface}, not rendered"
    assert not [url for url in seen.requests if url.rstrip("/").endswith(f"/pwned/{n}")], CORPUS[n]
