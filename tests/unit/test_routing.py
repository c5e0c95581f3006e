"""Cell routing: which cells become agent turns and which stay IPython's."""

from __future__ import annotations

import pytest

from agentcell.kernel.routing import HOST_NAME, make_router

kernel = make_router(prose_is_agent=True)
extension = make_router(prose_is_agent=False)


def lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


@pytest.mark.parametrize(
    "cell",
    ["%who\n", "!ls\n", "%model\n%budget 1\n", "%%timeit\n1 + 1\n", "\n\n", "%%capture out\nprint(1)\n"],
)
def test_magics_and_shell_lines_pass_through(cell: str) -> None:
    assert kernel(lines(cell)) == lines(cell)
    assert extension(lines(cell)) == lines(cell)


def test_prose_becomes_an_awaited_turn_with_its_text_intact() -> None:
    cell = "What is the mean of `data`?\nUse 'quotes' and \"doubles\" and a \\ backslash.\n"
    [line] = kernel(lines(cell))
    assert line.startswith(f"await {HOST_NAME}.ask(")
    assert eval(line[len(f"await {HOST_NAME}.ask(") : -2]) == cell


def test_leading_magic_lines_run_before_the_turn() -> None:
    cell = "%tools force python\n\nCompute the mean.\n"
    routed = kernel(lines(cell))
    assert routed[:2] == ["%tools force python\n", "\n"]
    assert routed[2] == f"await {HOST_NAME}.ask('Compute the mean.\\n')\n"


def test_python_cells_run_their_body() -> None:
    assert kernel(lines("%%python\nx = 1\nx\n")) == ["x = 1\n", "x\n"]


def test_agent_cells_are_turns_in_both_modes() -> None:
    for router in (kernel, extension):
        assert router(lines("%%agent\nhello\n")) == [f"await {HOST_NAME}.ask('hello\\n')\n"]


def test_prose_stays_python_in_a_plain_kernel() -> None:
    assert extension(lines("x = 1\n")) == ["x = 1\n"]
