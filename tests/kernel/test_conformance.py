"""Protocol conformance of the agentcell kernel (jupyter_kernel_test), with Python samples sent through
``%%python`` since prose goes to the agent."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import ClassVar

import jupyter_kernel_test
import pytest

pytestmark = pytest.mark.slow


class TestAgentCellKernelConformance(jupyter_kernel_test.KernelTests):
    kernel_name = "agentcell"
    language_name = "markdown"
    file_extension = ".md"

    code_hello_world = "%%python\nprint('hello, world')"
    code_stderr = "%%python\nimport sys\nprint('test', file=sys.stderr)"
    complete_code_samples: ClassVar[list[str]] = [
        "What is the mean of data?",
        "%%python\n1 + 1",
        "%budget 1",
    ]
    incomplete_code_samples: ClassVar[list[str]] = ["%%python\nfor i in range(3):"]
    code_generate_error = "%%python\nraise ValueError('boom')"
    code_execute_result: ClassVar[list[dict[str, str]]] = [{"code": "%%python\n6 * 7", "result": "42"}]
    code_display_data: ClassVar[list[dict[str, str]]] = [
        {
            "code": "%%python\nfrom IPython.display import HTML, display\ndisplay(HTML('<b>x</b>'))",
            "mime": "text/html",
        }
    ]
    # IPython answers a history "range" of the live session with session number 0 rather than its own
    # number, which jupyter_kernel_test rejects for every IPython-based kernel; tail and search work.
    supported_history_operations = ("tail", "search")
    code_history_pattern = "%%python?6 * 7"
    completion_samples: ClassVar[list[dict[str, object]]] = [{"text": "%bud", "matches": {"%budget"}}]
    code_inspect_sample = "zip"
    code_page_something = "%%python\nzip?"
    code_clear_output = "%%python\nfrom IPython.display import clear_output\nclear_output()"

    _saved: ClassVar[dict[str, str | None]] = {}
    _tmp: ClassVar[str] = ""

    @classmethod
    def setUpClass(cls) -> None:
        cls._tmp = tempfile.mkdtemp(prefix="agentcell-conformance-")
        for key, value in {"AGENTCELL_DB": f"{cls._tmp}/c.db", "AGENTCELL_MODEL": "scripted"}.items():
            cls._saved[key] = os.environ.get(key)
            os.environ[key] = value
        super().setUpClass()

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        for key, value in cls._saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(cls._tmp, ignore_errors=True)
