"""README.md's "Reliability" table is generated from the hardening suite; it fails here when it is stale.

Regenerate it with ``python tests/hardening/reliability.py`` (runs the suite and rewrites the table).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .hardening import reliability


def test_the_readme_table_lists_every_family_with_the_cases_pytest_collects() -> None:
    rows = reliability.rows_in(reliability.README.read_text(encoding="utf-8"))
    collected = reliability.collected_counts()
    families = [path.name for path in reliability.family_files()]
    stale = "README.md's Reliability table is stale: run `python tests/hardening/reliability.py` and commit README.md"
    assert [r.file for r in rows] == families, stale
    assert {r.file: r.cases for r in rows} == {name: collected[name] for name in families}, stale
    assert sum(collected.values()) == sum(r.cases for r in rows) > 0, stale


JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="5">
<testcase classname="tests.hardening.test_a" name="test_one" time="0.1"/>
<testcase classname="tests.hardening.test_a" name="test_two[x]" time="0.1"><failure message="boom"/></testcase>
<testcase classname="tests.hardening.test_a.TestGroup" name="test_three" time="0.1"/>
<testcase classname="tests.hardening.test_b" name="test_four" time="0.1"><skipped message="no"/></testcase>
<testcase classname="tests.hardening.test_b" name="test_five" time="0.1"/>
</testsuite></testsuites>"""


def test_the_table_reports_failures_and_skips_from_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "hardening"
    folder.mkdir()
    (folder / "test_a.py").write_text('"""Family A: the first kind of attack."""\n')
    (folder / "test_b.py").write_text('"""Family B."""\n')
    (folder / "test_c.py").write_text('"""Family C, not run."""\n')
    junit = tmp_path / "run.xml"
    junit.write_text(JUNIT)
    monkeypatch.setattr(reliability, "HERE", folder)
    rows = reliability.rows_from_junit(junit)
    assert [(r.family, r.file, r.cases, r.result) for r in rows] == [
        ("Family A: the first kind of attack", "test_a.py", 3, "1 failed"),
        ("Family B", "test_b.py", 2, "1 skipped"),
        ("Family C, not run", "test_c.py", 0, "not run"),
    ]
    readme = f"# x\n\n## Reliability\n\n{reliability.START}\nold\n{reliability.END}\n\n## Next\n"
    rewritten = reliability.rewrite(readme, rows)
    assert rewritten.startswith("# x\n\n## Reliability\n\n") and rewritten.endswith(f"{reliability.END}\n\n## Next\n")
    assert reliability.rows_in(rewritten) == rows and "old" not in rewritten
    with pytest.raises(ValueError, match="markers"):
        reliability.rewrite("# no table here\n", rows)
