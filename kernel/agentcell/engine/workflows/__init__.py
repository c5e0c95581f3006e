"""Workflow runs: a plan of steps over agents, run in session threads, journaled so a run can resume.

- ``validate.py`` checks a plan against the session (its graph, templates, agents) before anything runs;
- ``template.py`` parses and renders the prompts' references;
- ``journal.py`` makes the resume keys and finds journaled step items;
- ``step.py`` runs one step item as a session thread;
- ``run.py`` schedules the steps and their items and logs the run;
- ``result.py`` folds the events into :class:`WorkflowRun`;
- ``start.py`` starts a run for the user (a turn of its own) or for the agent (the ``start_workflow_run``
  tool).
"""

from __future__ import annotations

from .result import WorkflowItem, WorkflowRun, WorkflowStepResult, workflow_runs
from .run import WorkflowRunner
from .start import START_TOOL, check_workflow_plan, ended_run, run_started_by_user, start_event, workflow_tools
from .validate import DEFAULT_CONCURRENCY, CheckedPlan, check_plan

__all__ = [
    "DEFAULT_CONCURRENCY",
    "START_TOOL",
    "CheckedPlan",
    "WorkflowItem",
    "WorkflowRun",
    "WorkflowRunner",
    "WorkflowStepResult",
    "check_plan",
    "check_workflow_plan",
    "ended_run",
    "run_started_by_user",
    "start_event",
    "workflow_runs",
    "workflow_tools",
]
