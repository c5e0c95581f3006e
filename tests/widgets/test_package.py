"""The widget package: one version for Python and JS, the bundle built and shipped in the wheel."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import agentcell
import agentcell_widgets
from agentcell_widgets import STATIC, TurnWidget

ROOT = Path(__file__).resolve().parents[2]


def test_python_and_js_share_one_version() -> None:
    package = json.loads((ROOT / "widgets" / "js" / "package.json").read_text())
    lock = json.loads((ROOT / "widgets" / "js" / "package-lock.json").read_text())
    assert package["version"] == lock["version"] == agentcell.__version__ == agentcell_widgets.__version__


def test_the_installed_package_has_the_built_bundle() -> None:
    bundle = (STATIC / "turn.js").read_text()
    assert bundle.startswith(f"/* agentcell-widgets {agentcell.__version__} */")
    assert "export" in bundle and (STATIC / "turn.css").stat().st_size > 0
    assert "unpkg" not in bundle and "jsdelivr" not in bundle  # nothing from a CDN at run time


def test_the_widget_rejects_unknown_arguments() -> None:
    with pytest.raises(TypeError, match="itmes"):
        TurnWidget(itmes=[])


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_wheel_carries_the_bundle(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("agentcell-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"agentcell_widgets/static/turn.js", "agentcell_widgets/static/turn.css"} <= names
    assert "agentcell/render/widget_renderer.py" in names
    assert not [n for n in names if "node_modules" in n or n.startswith("widgets/js")]
