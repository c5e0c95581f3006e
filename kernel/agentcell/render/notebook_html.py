"""An executed notebook as one HTML page (nbconvert's lab template), keeping widget state and fallbacks.

nbclient saves the widgets' state in the notebook, and nbconvert embeds it so the page can render the live
widgets. nbconvert shows one representation per output, though, and for a widget that is the widget view
alone: a page opened offline, or where a widget's front end cannot load, would show nothing. Our template
(``templates/agentcell_html``) puts each widget output's static fallback (text/html, else Markdown, else
plain text) right after the view, where the widget's own CSS can hide it once the live view rendered.

The page loads nothing from a CDN. nbconvert's lab page would fetch require.js, MathJax, mermaid and the
widget manager from public CDNs; ours renders the saved anywidgets itself (``offline_widgets.js``: each
carries its ES module and CSS in its state) and leaves math as its LaTeX source and mermaid diagrams as
their text. Widgets of other kinds show their fallbacks. A finished turn's output is its bundle, not a
widget: the page carries the turn widget's views once and draws each turn from its saved bundle with them
(``offline_turns.js``), and KaTeX (with its fonts) only when a turn may have math; without JavaScript the HTML
fallback shows.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError

__all__ = ["TEMPLATES", "to_html", "write_html"]

TEMPLATES = Path(__file__).with_name("templates")

_MAYBE_MATH = re.compile(r"\$\$|\\\\[(\[]|\$(?!\s)[^$\n]+?(?<!\s)\$(?!\d)")
"""What the views' Markdown would typeset (widgets/js/src/math.ts), loosely, in a bundle's JSON (where a TeX
backslash is doubled): ``$$``, ``\\[``, ``\\(``, or ``$x$`` not followed by a digit. A false match costs
the page KaTeX's bytes; a miss would leave that math as its TeX source."""


def to_html(nb: Any) -> str:
    try:
        from nbconvert import HTMLExporter
    except ImportError:  # pragma: no cover - nbconvert comes with every Jupyter server
        raise ConfigurationError("writing HTML needs nbconvert: pip install nbconvert") from None
    exporter = HTMLExporter(  # type: ignore[no-untyped-call]  # nbconvert is untyped
        extra_template_basedirs=[str(TEMPLATES)], template_name="agentcell_html"
    )
    resources: dict[str, Any] = {}
    turns = _turns(nb)
    if turns:
        from agentcell_widgets import code_part

        # base64: a module's text could hold "</script" and end the element that carries it.
        resources["agentcell_turn_js"] = base64.b64encode(code_part("turn") or b"").decode()
        if any(_MAYBE_MATH.search(json.dumps(turn.get("events", []))) for turn in turns):
            resources["agentcell_math_js"] = base64.b64encode(code_part("math") or b"").decode()
    body, _ = exporter.from_notebook_node(nb, resources=resources)
    return str(body)


def _turns(nb: Any) -> list[dict[str, Any]]:
    from .renderer import TURN_MIMETYPE

    outputs = [o.get("data", {}) for c in nb.cells for o in c.get("outputs", [])]
    return [data[TURN_MIMETYPE] for data in outputs if isinstance(data.get(TURN_MIMETYPE), dict)]


def write_html(nb: Any, path: Path) -> None:
    path.write_text(to_html(nb), encoding="utf-8")
