"""The ``agentcell`` kernelspec.

``resources/kernel.json`` is the single source: the wheel installs that directory as shared data (so a
plain ``pip install`` registers the kernel), and ``agentcell install`` copies it with the absolute
interpreter path.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["KERNEL_NAME", "SPEC_DIR", "install", "kernel_json"]

KERNEL_NAME = "agentcell"
SPEC_DIR = Path(__file__).with_name("resources")


def kernel_json(python: str | None = None) -> dict[str, Any]:
    """The spec; ``python`` replaces the interpreter. The shipped ``"python"`` is swapped by jupyter_client
    for its own interpreter, which is right when the kernel and the server share an environment."""
    spec: dict[str, Any] = json.loads((SPEC_DIR / "kernel.json").read_text())
    if python is not None:
        spec["argv"][0] = python
    return spec


def install(*, user: bool = False, prefix: str | None = None) -> str:
    """Install the kernelspec through jupyter_client; returns where it went."""
    from jupyter_client.kernelspec import KernelSpecManager

    with tempfile.TemporaryDirectory() as tmp:
        spec_dir = Path(tmp) / KERNEL_NAME
        spec_dir.mkdir()
        (spec_dir / "kernel.json").write_text(json.dumps(kernel_json(sys.executable), indent=2) + "\n")
        destination: str = KernelSpecManager().install_kernel_spec(
            str(spec_dir), KERNEL_NAME, user=user, prefix=prefix, replace=True
        )
    return destination
