"""A workflow run in the static fallbacks (Markdown, HTML, plain text) of recorded runs
(``tests/fixtures/event_logs/workflow*.json``): the progress view's rows by depth, with status, items,
duration, tokens and cost, the run's totals, and each step item's thread under its step."""

from __future__ import annotations

import re
from typing import Any

from agentcell import events as ev
from agentcell.render.fallback_html import fallback_html
from agentcell.render.fold import TurnFold
from agentcell.render.workflow_rows import format_seconds, run_summary

from .test_fallbacks_of_logs import fold, html, markdown, turns


def table_rows(text: str) -> list[list[str]]:
    """The Markdown table's body rows, cell by cell."""
    lines = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| depth")]
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines]


def test_the_markdown_lists_the_steps_by_depth_with_their_figures() -> None:
    rows = table_rows(markdown("workflow_dag"))
    assert [(r[0], r[1], r[2], r[3], r[4]) for r in rows] == [
        ("0", "completed", "**facts**", "reader", ""),
        ("0", "completed", "**angles**", "reader", ""),
        ("1", "completed", "**paragraphs**", "writer", "3/3 items"),
        ("2", "completed", "**story**", "writer", ""),
    ]
    for row in rows:
        assert re.fullmatch(r"\d+ ms|\d+\.\d s", row[5]), row
        assert re.fullmatch(r"in \d+ · out [1-9]\d*", row[6]), row
        assert re.fullmatch(r"\\\$0\.\d+", row[7]), row  # the dollar escaped, so no viewer typesets it


def test_the_totals_are_the_sums_of_the_rows() -> None:
    view = fold(turns("workflow_dag")[0])
    (run,) = view.workflow_runs
    summary = run_summary(view, run)
    rows = [row for level in summary.levels for row in level]
    assert summary.usage.output_tokens == sum(r.usage.output_tokens for r in rows) > 0
    assert summary.usage.spent == sum(r.usage.spent for r in rows) > 0
    assert (summary.done, summary.total) == (6, 6)
    # The items' usage is what their threads spent: the run's total is the turn's.
    assert summary.usage.output_tokens == view.turn_usage.output_tokens
    head = markdown("workflow_dag").splitlines()[0]
    assert head.startswith("⚙️ **Workflow diamond — completed** · 6 of 6 items · ")
    assert f"out {summary.usage.output_tokens}" in head
    assert summary.seconds is not None and format_seconds(summary.seconds) in head


def test_each_item_thread_shows_under_its_step_and_nowhere_else() -> None:
    text = markdown("workflow_dag")
    summaries = re.findall(r"<summary>🧵 (.*?)</summary>", text)
    assert summaries == [
        "facts — completed · thread reader (scripted)",
        "angles — completed · thread reader (scripted)",
        "paragraphs · item 1: moon — completed · thread writer (scripted)",
        "paragraphs · item 2: sun — completed · thread writer (scripted)",
        "paragraphs · item 3: coast — completed · thread writer (scripted)",
        "story — completed · thread writer (scripted)",
    ]
    assert text.index("| 2 | completed | **story**") < text.index("<details>")  # the table comes first
    page = html("workflow_dag")
    assert page.count("<details><summary>🧵 ") == 6
    assert '<tr data-step="paragraphs"><td>1</td><td>completed</td><td><strong>paragraphs</strong></td>' in page


def test_a_second_run_says_every_step_was_reused() -> None:
    rows = table_rows(markdown("workflow_dag", 1))
    assert [(r[1], r[5], r[6]) for r in rows] == [("reused", "—", "in 0 · out 0")] * 4
    assert "6 reused" in markdown("workflow_dag", 1).splitlines()[0]
    assert "<details>" not in markdown("workflow_dag", 1)  # reused items ran in no thread


def test_an_item_that_continued_and_a_run_that_failed() -> None:
    rows = table_rows(markdown("workflow"))
    assert [(r[1], r[2], r[4]) for r in rows] == [
        ("completed", "**draft**", ""),
        ("completed, 1 failed", "**checks**", "2/2 items"),
        ("completed", "**final**", ""),
    ]
    assert "checks · item 2: facts — failed, the run went on · thread" in markdown("workflow")
    failed = markdown("workflow", 1)
    assert failed.splitlines()[0].startswith("⚙️ **Workflow broken — failed** · 1 of 1 items")
    assert "> ⚠️ only: " in failed
    assert table_rows(failed)[0][1] == "failed"
    assert "<td>failed</td>" in html("workflow", 1)


def test_the_plain_text_has_a_line_per_step() -> None:
    text = fold(turns("workflow_dag")[0]).to_text()
    lines = [line for line in text.splitlines() if line.startswith(("workflow ", "  depth "))]
    assert lines[0].startswith("workflow diamond: completed · 6 of 6 items")
    assert [line.split("  ")[1:4] for line in lines[1:]] == [
        ["depth 0", "completed", "facts"],
        ["depth 0", "completed", "angles"],
        ["depth 1", "completed", "paragraphs"],
        ["depth 2", "completed", "story"],
    ]


def test_a_run_started_by_a_coordinators_tool_is_still_the_turns_run() -> None:
    """The agent's ``start_workflow_run`` runs its workflow events in its own thread: the run is the turn's."""
    items: list[dict[str, Any]] = [
        {**data, "thread_id": "sthr_coordinator"} if data["type"].startswith("workflow_run.") else data
        for data in turns("workflow_dag")[0]
    ]
    view = TurnFold()
    for data in items:
        view.apply(ev.stream_item_adapter.validate_python(data))
    (run,) = view.workflow_runs
    assert run_summary(view, run).label == "completed"
    assert "sthr_coordinator" not in view.threads
    assert "<strong>Workflow diamond — completed</strong>" in fallback_html(view, footer="")
