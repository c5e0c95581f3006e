"""A gallery notebook opened in a real JupyterLab with no key, as on Binder: Run All replays its recording.

Here the kernel learns its notebook from the server (``JPY_SESSION_NAME`` is the path relative to the
server's root, and the kernel starts in the notebook's folder), which the nbclient tests do not reach.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import Page, expect

from .lab import Lab, open_notebook, run_all, run_lab, screenshot, turn, wait_cell_done

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(240)]

GALLERY = Path(__file__).resolve().parents[2] / "notebooks"
_DURATION = re.compile(r"^[\d.]+ m?s$", re.MULTILINE)
CLOSED = "http://127.0.0.1:9"  # the discard port: nothing listens, so a live request fails at once


@pytest.fixture(scope="module")
def keyless_lab(tmp_path_factory: pytest.TempPathFactory, monkeypatch_module: pytest.MonkeyPatch) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("binder-lab")
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "AGENTCELL_MODEL", "AGENTCELL_REPLAY"):
        monkeypatch_module.delenv(name, raising=False)  # run_lab passes os.environ on
    (base / "data").mkdir()
    env = {
        "AGENTCELL_DB": str(base / "agentcell.db"),
        "JUPYTER_DATA_DIR": str(base / "data"),
        "ANTHROPIC_BASE_URL": CLOSED,
        "OPENAI_BASE_URL": CLOSED,
    }
    with run_lab(base, env=env) as lab:
        shutil.copytree(GALLERY, lab.root / "notebooks")
        yield lab


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def recorded_replies(recording: Path) -> dict[str, str]:
    """Each recorded request's prompt, and the text its response streamed."""
    replies: dict[str, str] = {}
    for line in recording.read_text().splitlines()[1:]:
        entry = json.loads(line)
        text = "".join(e.get("text", "") for e in entry["events"] if e["kind"] == "text_delta")
        if text:
            replies[entry["prompt"]] = text
    return replies


def test_run_all_on_the_quickstart_replays_its_recording_with_no_key(page: Page, keyless_lab: Lab) -> None:
    notebook = keyless_lab.root / "notebooks" / "quickstart.ipynb"
    replies = recorded_replies(notebook.with_name("quickstart.agentcell.jsonl"))
    assert len(replies) == 2
    # SmolLM2 at temperature 0 could answer live as it did when recording, so the proof that the turns
    # were replayed is the replayer's own count, in a cell added at the end.
    nb = nbformat.read(notebook, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("%replay status"))
    nbformat.write(nb, notebook)
    sources = [cell.source for cell in nb.cells]
    last = len(sources) - 1

    open_notebook(page, keyless_lab, "notebooks/quickstart.ipynb")
    page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-item[data-command='runmenu:run-all']").click()
    wait_cell_done(page, last, timeout=120_000)

    for prompt, reply in replies.items():
        index = next(i for i, source in enumerate(sources) if source.rstrip().endswith(prompt))
        view = turn(page, index)
        expect(view.locator(".ac-turn-status")).to_have_text("done", timeout=30_000)
        # The widget renders the reply as Markdown; compare its words, as the reader sees them.
        shown = " ".join(view.locator(".ac-message").last.inner_text().split())
        assert shown == " ".join(reply.split())
    status = page.locator(".jp-Notebook .jp-Cell").nth(last).locator(".jp-OutputArea-output")
    expect(status).to_contain_text("replay mode: auto")
    expect(status).to_contain_text("(3 requests, 3 replayed); sent live: 0; not recorded: 0")
    assert page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").count() == 0
    screenshot(page, "quickstart-replayed-in-lab")


@pytest.mark.parametrize("name", ["quickstart", "budget_and_cost"])
def test_run_all_twice_replays_twice_and_each_turn_says_it_was_replayed(
    page: Page, keyless_lab: Lab, name: str
) -> None:
    folder = keyless_lab.root / "notebooks"
    shutil.copy(folder / f"{name}.agentcell.jsonl", folder / f"{name}-twice.agentcell.jsonl")
    nb = nbformat.read(GALLERY / f"{name}.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("%replay status"))
    nbformat.write(nb, folder / f"{name}-twice.ipynb")
    sources = [cell.source for cell in nb.cells]
    last = len(sources) - 1
    # The turns that sent a request in the committed notebook (a turn the budget refused sent none).
    asked = [
        i
        for i, cell in enumerate(nb.cells)
        if any('"span.model_request_end"' in json.dumps(o.get("data", {})) for o in cell.get("outputs", []))
    ]
    requests = len((folder / f"{name}.agentcell.jsonl").read_text().splitlines()) - 1  # after its header
    turns = [i for i, s in enumerate(sources) if nb.cells[i].cell_type == "code" and i not in asked and i < last]
    turns = [i for i in turns if not sources[i].lstrip().startswith("%")]

    open_notebook(page, keyless_lab, f"notebooks/{name}-twice.ipynb")
    status = page.locator(".jp-Notebook .jp-Cell").nth(last).locator(".jp-OutputArea-output")
    footers: list[list[str]] = []
    for run in (1, 2):
        page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
        page.locator(".lm-Menu-item[data-command='runmenu:run-all']").click()
        expect(status).to_contain_text(
            f"({requests} requests, {run * requests} replayed); sent live: 0; not recorded: 0", timeout=120_000
        )
        for index in asked:
            badge = turn(page, index).locator(".ac-origin")
            expect(badge).to_have_text("replayed", timeout=30_000)
            expect(badge).to_have_attribute("title", "replayed from the notebook's recording")
        # What each turn cost and left of the budget reads the same in both runs (not how long it took).
        footers.append([_DURATION.sub("", turn(page, i).locator(".ac-cost").inner_text()) for i in asked + turns])
        screenshot(page, f"{name}-run-all-{run}-replayed")
    assert footers[0] == footers[1]


def test_run_all_in_notebook7_replays_and_each_turn_says_so(page: Page, keyless_lab: Lab) -> None:
    folder = keyless_lab.root / "notebooks"
    shutil.copy(folder / "quickstart.agentcell.jsonl", folder / "quickstart-nb7.agentcell.jsonl")
    nb = nbformat.read(GALLERY / "quickstart.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("%replay status"))
    nbformat.write(nb, folder / "quickstart-nb7.ipynb")
    last = len(nb.cells) - 1
    asked = [
        i
        for i, cell in enumerate(nb.cells)
        if any('"span.model_request_end"' in json.dumps(o.get("data", {})) for o in cell.get("outputs", []))
    ]
    assert asked
    requests = len((folder / "quickstart.agentcell.jsonl").read_text().splitlines()) - 1

    open_notebook(page, keyless_lab, "notebooks/quickstart-nb7.ipynb", app="notebook7")
    run_all(page, next(i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"))
    status = page.locator(".jp-Notebook .jp-Cell").nth(last).locator(".jp-OutputArea-output")
    expect(status).to_contain_text(
        f"({requests} requests, {requests} replayed); sent live: 0; not recorded: 0", timeout=120_000
    )
    for index in asked:
        badge = turn(page, index).locator(".ac-origin")
        expect(badge).to_have_text("replayed", timeout=30_000)
        expect(badge).to_have_attribute("title", "replayed from the notebook's recording")
    screenshot(page, "quickstart-run-all-replayed-notebook7")
