"""A plot the python tool displays is saved once (issue 38): the saved turn's bundle holds it in its HTML
fallback, and the JupyterLab / Notebook 7 renderer draws it from there after the notebook is reopened."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from .conftest import script
from .lab import APPS, Lab, open_notebook, run_cell, save, screenshot, turn, wait_cell_done, write_notebook

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(240)]


PLOT = """
import zlib
from IPython.display import Image, display

def chunk(kind, data):
    return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")

def png(width, height):
    rows = b"".join(b"\\0" + bytes((x * 7 + y * 13) % 256 for x in range(width * 3)) for y in range(height))
    head = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 2, 0, 0, 0])
    return b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", head) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")

display(Image(data=png(120, 80)))
"""
"""The tool's code draws a striped PNG, so the image is in the turn's output, not in its input."""


def test_a_plot_is_saved_once_and_drawn_again_after_reopening(page: Page, lab: Lab) -> None:
    namespace: dict[str, Any] = {}
    exec(PLOT.replace("display(Image(data=png(120, 80)))", ""), namespace)  # the bytes the tool displays
    png = base64.b64encode(namespace["png"](120, 80)).decode()
    model = script(
        lab,
        "plot",
        [
            {"steps": [{"kind": "tool_call", "name": "python", "input": {"code": PLOT}}]},
            {"steps": [{"kind": "text", "text": "Plotted."}]},
        ],
    )
    path = write_notebook(lab, "plot.ipynb", [model, "Plot it."])
    open_notebook(page, lab, "plot.ipynb")
    run_cell(page, 0)
    wait_cell_done(page, 0)
    run_cell(page, 1)
    wait_cell_done(page, 1)
    expect(turn(page, 1).locator(".ac-tool img.ac-image")).to_be_visible()
    save(page)

    outputs = json.loads(path.read_text())["cells"][1]["outputs"]
    saved = json.dumps(outputs)
    assert saved.count(png) == 1, saved.count(png)
    assert len(saved) < len(png) + 12_000, (len(saved), len(png))

    for app in APPS:  # the saved turn, drawn by the extension's renderer from its bundle
        open_notebook(page, lab, "plot.ipynb", app=app)
        image = turn(page, 1).locator(".ac-tool img.ac-image")
        expect(image).to_be_visible(timeout=30_000)
        assert image.evaluate("img => img.decode().then(() => img.naturalWidth)") == 120
        screenshot(page, f"saved-plot-{app}")
