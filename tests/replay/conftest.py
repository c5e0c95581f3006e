"""The replay tests reuse the kernel tests' environment for a real kernel (``kernel_env``)."""

from __future__ import annotations

from ..kernel.conftest import kernel_env  # noqa: F401 - a fixture, found by its name
