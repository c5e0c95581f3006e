"""The wheel carries the license of every library its two bundles inline (the widget's turn.js and the
labextension). esbuild inlines them before JupyterLab's webpack step, whose license plugin therefore finds
none; the build lists them from esbuild's metafile (widgets/js/licenses.mjs). This reads the same metafile the
build kept and checks each bundled package is listed, at its installed version, with its license text."""

from __future__ import annotations

import json
import re
from pathlib import Path

from agentcell_widgets import STATIC

ROOT = Path(__file__).resolve().parents[2]
JS = ROOT / "widgets" / "js"
LAB_LICENSES = ROOT / "widgets" / "agentcell_widgets" / "labextension" / "static" / "third-party-licenses.json"
PACKAGE = re.compile(r"node_modules/((?:@[^/]+/)?[^/]+)/")


def bundled(metafile: dict[str, object]) -> dict[str, str]:
    """Each npm package with a file in a bundle, and its installed version."""
    packages: dict[str, str] = {}
    for path in metafile["inputs"]:  # type: ignore[attr-defined]
        found = PACKAGE.findall(str(path).replace("\\", "/"))
        if found:
            prefix = str(path)[: str(path).rindex(f"node_modules/{found[-1]}/")]
            manifest = json.loads((JS / prefix / "node_modules" / found[-1] / "package.json").read_text())
            packages[found[-1]] = manifest["version"]
    return packages


def listed(path: Path) -> dict[str, dict[str, str]]:
    return {entry["name"]: entry for entry in json.loads(path.read_text())["packages"]}


def check(packages: dict[str, str], licenses: dict[str, dict[str, str]]) -> None:
    assert set(packages) <= set(licenses), f"bundled without a license entry: {set(packages) - set(licenses)}"
    for name, version in packages.items():
        entry = licenses[name]
        assert entry["versionInfo"] == version, (name, entry["versionInfo"], version)
        assert entry["licenseId"] and entry["licenseId"] != "UNKNOWN", name
        assert len(entry["extractedText"]) > 200 and re.search(r"copyright|licen[cs]e", entry["extractedText"], re.I)


def test_every_bundled_package_has_its_license_in_the_shipped_files() -> None:
    widget, lab = json.loads((JS / "lib" / "metafile.json").read_text())
    widget_packages, lab_packages = bundled(widget), bundled(lab)
    # The libraries the views are made of: if these went missing the metafile reading itself broke.
    assert {"dompurify", "highlight.js", "katex", "marked"} <= set(lab_packages) & set(widget_packages)
    check(lab_packages | widget_packages, listed(LAB_LICENSES))
    check(widget_packages, listed(STATIC / "third-party-licenses.json"))
    assert "MPL-2.0" in listed(LAB_LICENSES)["dompurify"]["licenseId"]  # read from its package.json, not guessed
