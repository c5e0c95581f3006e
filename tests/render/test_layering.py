"""render/ folds what the engine produces: the engine never imports it, and its core imports no Jupyter."""

from __future__ import annotations

import subprocess
import sys


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(out.split())


def test_a_turn_of_the_engine_loads_nothing_of_render() -> None:
    loaded = _modules_after(
        "import tempfile\n"
        "from agentcell import Engine\n"
        "e = Engine(tempfile.mkdtemp() + '/a.db')\n"
        "a = e.agents.create(name='a', model='scripted')\n"
        "e.sessions.create(agent=a.id).send_sync('hi')"
    )
    assert not {m for m in loaded if m.startswith("agentcell.render")}


def test_the_fold_and_the_fallbacks_load_no_jupyter() -> None:
    loaded = _modules_after(
        "from agentcell.render import fallback_html, fold, markdown, renderer, statuses, throttle\n"
        "print(renderer.fallback_bundle(fold.TurnFold(), None)['text/markdown'])"
    )
    assert "agentcell.render.fold" in loaded
    jupyter = {m for m in loaded if m.split(".")[0] in {"IPython", "ipykernel", "ipywidgets", "anywidget", "nbconvert"}}
    assert jupyter == set()
