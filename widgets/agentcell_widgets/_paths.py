"""Where the built front end lives inside the installed package."""

from pathlib import Path

STATIC = Path(__file__).parent / "static"
"""``turn.js`` and ``turn.css``, built by esbuild from ``widgets/js`` (gitignored; shipped in the wheel)."""
