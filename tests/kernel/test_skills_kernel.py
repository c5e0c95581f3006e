"""``%skills`` and ``/name`` in a real agentcell kernel: the notebook folder's skills offered but not
attached, added as a new agent version, activated by a prose cell, pinned across a kernel restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..skill_folders import skill_folder, stored_events
from .conftest import execute, running_kernel, write_script

pytestmark = pytest.mark.slow

OFFERED = "%%python\nprint(__agentcell__.session.offered_tool_names())"


def test_skills_magic_add_activate_restart_and_remove(kernel_env: dict[str, str], tmp_path: Path) -> None:
    notebook_dir = tmp_path  # JPY_SESSION_NAME is tmp_path/notebook.ipynb
    folder = skill_folder(
        notebook_dir / ".agents" / "skills",
        "house-style",
        description="Summarise data in the house style.",
        body="Use exactly three bullets.",
        frontmatter="name: house-style\ndescription: Summarise data in the house style.\nauthor: someone",
        files={"scripts/tally.py": "print(3)\n"},
    )
    skill_folder(notebook_dir / "skills", "broken", description=None)
    script = [{"steps": [{"kind": "text", "text": "• one\n• two\n• three"}]}]
    kernel_env["AGENTCELL_MODEL"] = write_script(tmp_path / "script.json", script)
    with running_kernel(kernel_env, cwd=notebook_dir) as (km, kc):
        listed = execute(kc, "%skills").stdout
        assert listed.startswith("no skills (`%skills add PATH` attaches one)\noffered by the notebook's folder")
        assert "  .agents/skills/house-style  house-style: Summarise data in the house style." in listed
        assert "SKILL.md:4: warning: unknown frontmatter key 'author'" in listed
        assert "  skills/broken  broken: (cannot be loaded)" in listed and "missing_description" not in listed
        assert "error: no description" in listed
        assert "activate_skill" not in execute(kc, OFFERED).stdout  # offered by the folder is not attached
        plain = execute(kc, "/house-style summarise this")  # not attached: plain prose, no activation
        assert plain.status == "ok"

        added = execute(kc, "%skills add .agents/skills/house-style")
        assert added.stdout.splitlines()[0] == ("skill house-style v1 attached (agent v2): /house-style activates it")
        assert execute(kc, "%skills").stdout.startswith("skills of this session (1):\n  house-style v1  Summarise")
        assert "activate_skill" in execute(kc, OFFERED).stdout
        turn = execute(kc, "/house-style summarise sales.csv")
        assert turn.status == "ok", turn.stderr

        km.restart_kernel(now=True)
        kc.wait_for_ready(timeout=60)
        (folder / "SKILL.md").write_text("---\nname: house-style\ndescription: Changed.\n---\nFour bullets.\n")
        assert "house-style v1  Summarise data" in execute(kc, "%skills").stdout  # still pinned to v1
        again = execute(kc, "%skills add .agents/skills/house-style")
        assert again.stdout.startswith("skill house-style v2 attached (agent v3)")
        assert "house-style v2  Changed." in execute(kc, "%skills").stdout

        broken = execute(kc, "%skills add skills/broken")
        assert broken.status == "error" and "the folder cannot be loaded as a skill" in broken.stderr
        assert "SKILL.md: error: no description" in broken.stderr and "Traceback" not in broken.stderr
        assert execute(kc, "%skills remove house-style").stdout.strip() == "skill house-style removed (agent v4)"
        assert execute(kc, "%skills").stdout.startswith("no skills")
        assert "%skills [list | add PATH | remove NAME]" in execute(kc, "%skills sideways").stderr

    events = stored_events(kernel_env["AGENTCELL_DB"])
    opened = [e for e in events if e["type"] == "user.message"]
    assert [e.get("skills", []) for e in opened] == [[], ["house-style"]]
    assert opened[1]["content"][0]["text"].strip() == "/house-style summarise sales.csv"
    [activated] = [e for e in events if e["type"] == "session.skill_activated"]
    assert (activated["name"], activated["version"], activated["requested_by"]) == ("house-style", 1, "user")
    assert activated["files"] == ["scripts/tally.py"]
    assert (notebook_dir / ".agentcell/skills/house-style/v1/scripts/tally.py").read_text() == "print(3)\n"
