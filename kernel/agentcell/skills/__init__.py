"""Skills in the open Agent Skills format: ``SKILL.md`` (``format.py``), folders (``folder.py``) and
``engine.skills`` (``api.py``)."""
