"""render/ folds what the engine produces: the engine never imports it, and its core imports no Jupyter."""

from __future__ import annotations

import subprocess
import sys


def _holds_in_a_fresh_interpreter(code: str, check: str) -> None:
    """Run ``code``, then assert ``check`` (an expression over ``loaded``, the imported module names)."""
    script = f"{code}\nimport sys\nloaded = set(sys.modules)\nassert {check}, sorted(loaded)"
    run = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]


def test_a_turn_of_the_engine_loads_nothing_of_render() -> None:
    _holds_in_a_fresh_interpreter(
        "import tempfile\n"
        "from agentcell import Engine\n"
        "e = Engine(tempfile.mkdtemp() + '/a.db')\n"
        "a = e.agents.create(name='a', model='scripted')\n"
        "assert e.sessions.create(agent=a.id).send_sync('hi').text == 'You said: hi'",
        "not {m for m in loaded if m.startswith('agentcell.render')}",
    )


def test_the_fold_and_the_fallbacks_load_no_jupyter() -> None:
    _holds_in_a_fresh_interpreter(
        "from agentcell.render import fallback_html, fold, markdown, renderer, statuses, throttle\n"
        "assert renderer.fallback_bundle(fold.TurnFold(), None, html=True)['text/html']",
        "'agentcell.render.fold' in loaded and not {m for m in loaded if m.split('.')[0] in "
        "{'IPython', 'ipykernel', 'ipywidgets', 'anywidget', 'nbconvert', 'traitlets'}}",
    )
