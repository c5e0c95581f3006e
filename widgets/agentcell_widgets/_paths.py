"""Where the built front end lives inside the installed package."""

from pathlib import Path

STATIC = Path(__file__).parent / "static"
"""``loader.js`` (each turn widget's ``_esm``) and the parts it loads, ``turn.js`` and ``math.js``, built by
esbuild from ``widgets/js`` (gitignored; shipped in the wheel)."""
