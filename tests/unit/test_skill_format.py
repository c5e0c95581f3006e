"""The Agent Skills format, rule by rule: what loads, what loads with a warning, what is skipped, and where
each diagnostic points (file and line)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentcell.records.skill import SkillDiagnostic
from agentcell.skills.folder import MAX_SKILL_BYTES, discover, read_folder
from agentcell.skills.format import parse_skill_md

from ..skill_folders import skill_folder


def codes(diagnostics: list[SkillDiagnostic]) -> list[tuple[str, str, int | None]]:
    return [(d.level, d.code, d.line) for d in diagnostics]


def test_a_minimal_skill_loads_with_its_files_and_no_diagnostics(tmp_path: Path) -> None:
    root = skill_folder(
        tmp_path,
        "pdf-processing",
        description="Extract text from PDFs. Use when handling PDFs.",
        body="\n\n# PDF\nRun scripts/extract.py.\n\n",
        files={"scripts/extract.py": "print('text')\n", "references/REFERENCE.md": "# Ref\n"},
    )
    (root / "scripts" / "extract.py").chmod(0o755)
    folder = read_folder(root)
    assert folder.ok and folder.diagnostics == []
    front = folder.frontmatter
    assert (front.name, front.description) == ("pdf-processing", "Extract text from PDFs. Use when handling PDFs.")
    assert front.body == "# PDF\nRun scripts/extract.py."  # trimmed
    assert [(f.path, f.executable) for f in folder.files] == [
        ("SKILL.md", False),
        ("references/REFERENCE.md", False),
        ("scripts/extract.py", True),
    ]


def test_the_optional_fields_are_read_as_the_spec_says() -> None:
    text = (
        "---\nname: pdf\ndescription: PDFs.\nlicense: Apache-2.0\ncompatibility: Requires poppler\n"
        'metadata:\n  author: example-org\n  version: "1.0"\nallowed-tools: Bash(git:*) Read\n---\nbody\n'
    )
    front = parse_skill_md(text, "pdf")
    assert front.diagnostics == []
    assert (front.license, front.compatibility) == ("Apache-2.0", "Requires poppler")
    assert front.metadata == {"author": "example-org", "version": "1.0"}
    assert front.allowed_tools == ["Bash(git:*)", "Read"]


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("PDF-Processing", "invalid_name"),  # uppercase
        ("-pdf", "invalid_name"),  # a leading hyphen
        ("pdf-", "invalid_name"),  # a trailing one
        ("pdf--processing", "invalid_name"),  # doubled
        ("pdf_processing", "invalid_name"),  # not a letter, digit or hyphen
        ("a" * 65, "long_name"),  # over 64 characters
    ],
)
def test_a_name_that_breaks_a_soft_rule_loads_with_a_warning_on_its_line(name: str, code: str) -> None:
    front = parse_skill_md(f"---\ndescription: d\nname: {name}\n---\nbody", name)
    assert front.ok and front.name == name
    assert codes(front.diagnostics) == [("warning", code, 3)]


def test_a_name_unlike_its_folder_loads_with_a_warning() -> None:
    front = parse_skill_md("---\nname: pdf\ndescription: d\n---\nbody", "pdf-tools")
    assert front.ok and front.name == "pdf"
    assert codes(front.diagnostics) == [("warning", "name_mismatch", 2)]
    assert "'pdf' differs from its folder's name 'pdf-tools'" in front.diagnostics[0].message


def test_a_missing_name_borrows_the_folders_with_a_warning() -> None:
    front = parse_skill_md("---\ndescription: d\n---\nbody", "csv-style")
    assert front.ok and front.name == "csv-style"
    assert codes(front.diagnostics) == [("warning", "missing_name", None)]


@pytest.mark.parametrize("name", ["../escape", "two words", "a/b", "c:d"])
def test_a_name_no_folder_could_hold_is_an_error(name: str) -> None:
    front = parse_skill_md(f"---\nname: '{name}'\ndescription: d\n---\nbody", "x")
    assert not front.ok
    assert codes(front.diagnostics) == [("error", "unsafe_name", 2)]


@pytest.mark.parametrize(
    ("frontmatter", "line"),
    [
        ("name: pdf", None),
        ("name: pdf\ndescription: ''", 3),
        ("name: pdf\ndescription:", 3),
        ("name: pdf\ndescription: [a]", 3),
    ],
)
def test_a_skill_without_a_description_is_skipped_with_an_error(frontmatter: str, line: int | None) -> None:
    front = parse_skill_md(f"---\n{frontmatter}\n---\nbody", "pdf")
    assert not front.ok
    assert codes(front.diagnostics) == [("error", "missing_description", line)]
    assert "skipped" in front.diagnostics[0].message


def test_long_description_and_compatibility_load_with_warnings() -> None:
    text = f"---\nname: pdf\ndescription: {'d' * 1025}\ncompatibility: {'c' * 501}\n---\nbody"
    front = parse_skill_md(text, "pdf")
    assert front.ok and len(front.description) == 1025
    assert codes(front.diagnostics) == [("warning", "long_description", 3), ("warning", "long_compatibility", 4)]


def test_an_unknown_key_is_a_warning_naming_it_and_its_line() -> None:
    front = parse_skill_md("---\nname: pdf\ndescription: d\nversion: 2\nauthor: me\n---\nbody", "pdf")
    assert front.ok
    assert codes(front.diagnostics) == [("warning", "unknown_key", 4), ("warning", "unknown_key", 5)]
    assert "'version'" in front.diagnostics[0].message


def test_metadata_values_that_are_not_text_are_read_as_text_with_a_warning() -> None:
    front = parse_skill_md("---\nname: pdf\ndescription: d\nmetadata:\n  version: 1.0\n  ok: yes\n---\nb", "pdf")
    assert front.metadata == {"version": "1.0", "ok": "True"}
    assert [d.code for d in front.diagnostics] == ["metadata_not_text", "metadata_not_text"]
    assert parse_skill_md("---\nname: p\ndescription: d\nmetadata: [1]\n---\nb", "p").metadata == {}


def test_an_unquoted_colon_in_a_value_is_repaired_with_a_warning_as_the_client_guide_suggests() -> None:
    text = "---\nname: pdf\ndescription: Use this skill when: the user asks about PDFs\n---\nbody"
    front = parse_skill_md(text, "pdf")
    assert front.ok and front.description == "Use this skill when: the user asks about PDFs"
    assert codes(front.diagnostics) == [("warning", "yaml_repaired", 3)]


def test_unparseable_yaml_is_skipped_with_an_error_at_its_line() -> None:
    text = "---\nname: pdf\ndescription: d\nmetadata:\n  a: [unclosed\n---\nbody"
    front = parse_skill_md(text, "pdf")
    assert not front.ok
    [diagnostic] = front.diagnostics
    assert (diagnostic.level, diagnostic.code, diagnostic.file) == ("error", "yaml_error", "SKILL.md")
    assert diagnostic.line is not None and 5 <= diagnostic.line <= 6
    assert str(diagnostic).startswith(f"SKILL.md:{diagnostic.line}: error: the frontmatter is not valid YAML")


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("# no frontmatter\nname: pdf", "no_frontmatter"),
        ("---\nname: pdf\ndescription: d\nbody without a closing line", "unclosed_frontmatter"),
        ("---\n- a list\n---\nbody", "frontmatter_not_mapping"),
    ],
)
def test_a_file_without_usable_frontmatter_is_an_error(text: str, code: str) -> None:
    front = parse_skill_md(text, "pdf")
    assert not front.ok and [d.code for d in front.diagnostics] == [code]


def test_an_empty_or_very_long_body_loads_with_a_warning() -> None:
    assert codes(parse_skill_md("---\nname: p\ndescription: d\n---\n", "p").diagnostics) == [
        ("warning", "empty_body", 4)
    ]
    long = parse_skill_md("---\nname: p\ndescription: d\n---\n" + "line\n" * 501, "p")
    assert long.ok and [d.code for d in long.diagnostics] == ["long_body"]


def test_a_folder_without_skill_md_is_an_error_that_names_it(tmp_path: Path) -> None:
    (tmp_path / "pdf").mkdir()
    (tmp_path / "pdf" / "skill.md").write_text("---\nname: pdf\ndescription: d\n---\n")
    folder = read_folder(tmp_path / "pdf")
    assert not folder.ok
    assert [(d.code, d.file) for d in folder.diagnostics] == [("no_skill_md", "SKILL.md")]
    assert "rename it SKILL.md" in folder.diagnostics[0].message


def test_links_leading_out_and_cache_folders_are_left_out(tmp_path: Path) -> None:
    root = skill_folder(tmp_path / "skills", "pdf", files={"scripts/run.py": "x", "scripts/__pycache__/run.pyc": "c"})
    secret = tmp_path / "secret.txt"
    secret.write_text("do not ship")
    os.symlink(secret, root / "leak.txt")
    os.symlink(root / "scripts" / "run.py", root / "alias.py")  # inside: kept
    folder = read_folder(root)
    assert folder.ok
    assert [f.path for f in folder.files] == ["SKILL.md", "alias.py", "scripts/run.py"]
    assert [(d.level, d.code, d.file) for d in folder.diagnostics] == [("warning", "symlink", "leak.txt")]


def test_a_folder_over_the_size_cap_is_refused(tmp_path: Path) -> None:
    root = skill_folder(tmp_path, "big")
    (root / "assets").mkdir()
    (root / "assets" / "blob.bin").write_bytes(b"\0" * (MAX_SKILL_BYTES + 1))
    folder = read_folder(root)
    assert not folder.ok and [d.code for d in folder.diagnostics] == ["too_large"]


def test_the_digest_is_the_folders_content_wherever_it_is(tmp_path: Path) -> None:
    one = skill_folder(tmp_path / "a", "pdf", files={"scripts/x.py": "1"})
    two = skill_folder(tmp_path / "b", "pdf", files={"scripts/x.py": "1"})
    assert read_folder(one).digest == read_folder(two).digest
    (two / "scripts" / "x.py").chmod(0o755)
    assert read_folder(one).digest != read_folder(two).digest  # the mode is part of it
    (two / "scripts" / "x.py").chmod(0o644)
    (two / "scripts" / "x.py").write_text("2")
    assert read_folder(one).digest != read_folder(two).digest


def test_discover_finds_skills_and_dot_agents_skills_and_warns_of_a_shadowed_name(tmp_path: Path) -> None:
    skill_folder(tmp_path / "skills", "pdf")
    skill_folder(tmp_path / ".agents" / "skills", "csv-style")
    skill_folder(tmp_path / ".agents" / "skills", "pdf", description="the other pdf")
    skill_folder(tmp_path / "skills", "broken", description=None)
    (tmp_path / "skills" / "README.md").write_text("not a skill")
    (tmp_path / "skills" / "empty-dir").mkdir()
    found = discover(tmp_path)
    assert [(f.path.relative_to(tmp_path).as_posix(), f.ok) for f in found] == [
        ("skills/broken", False),
        ("skills/pdf", True),
        (".agents/skills/csv-style", True),
    ]
    assert [d.code for d in found[1].diagnostics] == ["shadowed"]
    assert ".agents/skills/pdf" in found[1].diagnostics[0].message
