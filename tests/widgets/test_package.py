"""The widget package: one version for Python and JS, the bundle built and shipped in the wheel."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import comm
import pytest
from comm.base_comm import BaseComm

import agentcell
import agentcell_widgets
from agentcell_widgets import STATIC, TurnWidget

ROOT = Path(__file__).resolve().parents[2]
LABEXTENSION_LIST = (
    "import sys; from jupyterlab.labextensions import main; sys.argv = ['jupyter-labextension', 'list']; main()"
)


def test_python_and_js_share_one_version() -> None:
    package = json.loads((ROOT / "widgets" / "js" / "package.json").read_text())
    lock = json.loads((ROOT / "widgets" / "js" / "package-lock.json").read_text())
    assert package["version"] == lock["version"] == agentcell.__version__ == agentcell_widgets.__version__


def test_the_installed_package_has_the_built_bundle() -> None:
    for part in ("loader.js", "turn.js", "math.js"):
        bundle = (STATIC / part).read_text()
        assert bundle.startswith(f"/* agentcell-widgets {agentcell.__version__} */")
        assert "export" in bundle
        assert "unpkg" not in bundle and "jsdelivr" not in bundle  # nothing from a CDN at run time
    assert TurnWidget._esm == (STATIC / "loader.js").read_text()  # each turn carries the loader alone
    assert len(TurnWidget._esm) < 2_000


def test_the_widget_rejects_unknown_arguments() -> None:
    with pytest.raises(TypeError, match="itmes"):
        TurnWidget(itmes=[])


class _AnsweredAtOnce(BaseComm):
    """A comm whose front end says hello the moment the comm_open is out, before the kernel's next line: what
    ipykernel 7.3 can do on a subshell's thread (JupyterLab's comms over subshells)."""

    def publish_msg(self, msg_type: str, *args: object, **kwargs: object) -> None:
        if msg_type == "comm_open":
            hello = {"method": "custom", "content": {"type": "hello", "from": 1}}
            self.handle_msg({"content": {"comm_id": self.comm_id, "data": hello}, "buffers": []})


def test_the_views_first_message_reaches_the_widget_even_as_its_comm_opens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(comm, "create_comm", _AnsweredAtOnce)
    heard: list[object] = []
    widget = TurnWidget(items=[], on_msg=lambda _w, content, _b: heard.append(content))
    assert heard == [{"type": "hello", "from": 1}]
    assert isinstance(widget.comm, _AnsweredAtOnce) and widget.comm.primary
    widget.close()


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
    assert {f"agentcell_widgets/static/{part}.js" for part in ("loader", "turn", "math")} <= names
    assert "agentcell/render/widget_renderer.py" in names
    assert not [n for n in names if "node_modules" in n or n.startswith("widgets/js")]
    lab = "agentcell-0.1.0.data/data/share/jupyter/labextensions/agentcell-widgets/"
    assert {f"{lab}package.json", f"{lab}install.json"} <= names
    assert [n for n in names if n.startswith(f"{lab}static/remoteEntry.") and n.endswith(".js")]
    assert not [n for n in names if n.startswith("agentcell_widgets/labextension")]  # shipped once
    # The bundled libraries' licenses travel with both bundles (tests/widgets/test_licenses.py checks them all).
    for licenses in (f"{lab}static/third-party-licenses.json", "agentcell_widgets/static/third-party-licenses.json"):
        shipped = {p["name"] for p in json.loads(zipfile.ZipFile(wheel).read(licenses))["packages"]}
        assert {"dompurify", "highlight.js", "katex", "marked"} <= shipped, licenses

    # Installed in a fresh environment, JupyterLab finds it with no further step. The fresh venv borrows
    # this one's dependencies through a .pth file rather than downloading them again.
    venv = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    fresh_python = venv / "bin" / "python"
    site = subprocess.run(
        [fresh_python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    borrowed = [p for p in sys.path if p.endswith("site-packages")]
    (Path(site) / "borrowed.pth").write_text("\n".join(borrowed) + "\n")
    subprocess.run(
        [fresh_python, "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
        check=True,
        capture_output=True,
    )
    listed = subprocess.run(
        # `jupyter labextension list`, as the fresh environment's own script would run it
        [fresh_python, "-c", LABEXTENSION_LIST],
        check=True,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    output = listed.stdout + listed.stderr
    assert str(venv / "share" / "jupyter" / "labextensions") in output
    version = re.escape(agentcell.__version__)
    assert re.search(rf"agentcell-widgets v{version} \S*enabled\S* \S*OK\S* \(python, agentcell\)", output)
