"""Permission flips: the agent's own code tries to raise its preset, add "always" rules or lift the budget.

One agentcell kernel (through jupyter_client) under ``workspace-write``. Each case is a scripted turn whose
model calls the python tool with one way of changing what confines it: the ``%permissions`` and
``%budget`` magics, ``%config AgentCell.permissions`` and ``AgentCell.python_tool`` (whether the python
tool asks), the session's own API, the approval broker, and the same from a thread the code starts. Each
must be refused with the one clear error, the session's preset, rules and budget must be as the user left
them, and the user's own cell must still change them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from .kernel_session import MarkdownNotebook, logged_events, markdown_kernel

pytestmark = pytest.mark.slow

FLIPS = {
    "permissions-magic": "get_ipython().run_line_magic('permissions', 'danger-full-access')",
    "permissions-magic-down": "get_ipython().run_line_magic('permissions', 'read-only')",
    "budget-magic": "get_ipython().run_line_magic('budget', 'off')",
    "config-magic": "get_ipython().run_line_magic('config', 'AgentCell.permissions = \"danger-full-access\"')",
    "session-api": "__agentcell__.session.update(permissions='danger-full-access')",
    "budget-api": "__agentcell__.session.update(budget='1000')",
    "python-tool-trait": "__agentcell__.config.python_tool = 'ask'",
    "python-tool-api": "from agentcell.tools.python_access import set_python_tool\nset_python_tool('ask')",
    "rules-restore": "__agentcell__.session.approvals.restore({'bash:execute': True})",
    "rules-revoke": "__agentcell__.session.approvals.revoke(['bash:execute'])",
    "from-a-thread": (
        "import threading\nbox = []\ndef flip():\n"
        "    try:\n        __agentcell__.session.update(permissions='danger-full-access')\n"
        "    except BaseException as exc:\n        box.append(exc)\n"
        "t = threading.Thread(target=flip)\nt.start()\nt.join()\nraise box[0]"
    ),
    "from-a-pool": (
        "from concurrent.futures import ThreadPoolExecutor\n"
        "with ThreadPoolExecutor(1) as pool:\n"
        "    pool.submit(get_ipython().run_line_magic, 'permissions', 'danger-full-access').result()"
    ),
}


class Notebook(MarkdownNotebook):
    def use_script(self, *responses: dict[str, Any]) -> int:
        """A priced script (a budget needs a model with a list price)."""
        self.scripts += 1
        path = self.root / f"script-{self.scripts}.json"
        path.write_text(json.dumps({"pricing": {"input_mtok": "3", "output_mtok": "15"}, "responses": responses}))
        assert self.cell(f"%model scripted:{path}", timeout=50).status == "ok"
        return self.scripts

    def python_turn(self, code: str) -> dict[str, Any]:
        """A turn whose model runs ``code`` with the python tool once; the logged result."""
        n = self.scripts + 1
        self.use_script(
            {"steps": [{"kind": "tool_call", "name": "python", "input": {"code": code}}]},
            {"steps": [{"kind": "text", "text": f"done {n}"}]},
        )
        run = self.cell(f"Run the code, turn {n}.")
        assert run.status == "ok", run.reply
        return [e for e in logged_events(self.db) if e["type"] == "agent.tool_result"][-1]

    def settings(self) -> str:
        # %permissions says whether the python tool asks (AgentCell.python_tool) too
        return self.cell("%permissions\n%budget\n%config AgentCell.permissions").stdout


@pytest.fixture(scope="module")
def notebook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Notebook]:
    root = tmp_path_factory.mktemp("permission-flip")
    with markdown_kernel(root) as (km, kc, db):
        nb = Notebook(km, kc, root, db)
        nb.use_script({"steps": [{"kind": "text", "text": "hello"}]})
        assert nb.cell("Hello.").status == "ok"  # the session exists
        assert nb.cell("%budget 5").status == "ok"
        yield nb


@pytest.mark.parametrize("flip", list(FLIPS))
def test_the_agents_code_cannot_change_its_permissions(notebook: Notebook, flip: str) -> None:
    before = notebook.settings()
    assert "permissions: workspace-write" in before and "budget: $5" in before
    result = notebook.python_turn(FLIPS[flip])
    text = json.dumps(result["content"])
    # %config logs the error it meets
    assert result["is_error"] or flip == "config-magic", text
    assert "refused:" in text and "only by the user's hand" in text, text
    assert notebook.settings() == before  # preset, rules and budget as the user left them
    assert not any(e["type"] == "session.updated" for e in logged_events(notebook.db)[-6:])


def test_the_users_own_cell_still_changes_them(notebook: Notebook) -> None:
    assert "permissions: read-only" in notebook.cell("%permissions read-only").stdout
    assert "budget: none" in notebook.cell("%budget off").stdout
    assert "permissions: workspace-write" in notebook.cell("%permissions workspace-write").stdout
    assert "budget: $5" in notebook.cell("%budget 5").stdout
