"""The notebook is the agent's context: code cells run between turns reach the model, through the real kernel
against the loopback Anthropic server, read in the request the server received."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from ..providers.conftest import API_KEY, SSEServer, server, sse_reply
from .conftest import execute, running_kernel

pytestmark = pytest.mark.slow

# A 1x1 PNG.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


__all__ = ["server"]  # the loopback Anthropic server, a fixture of tests/providers

IMAGE_CELL = (
    "%%python\nimport base64\nfrom IPython.display import Image, display\n"
    f"display(Image(data=base64.b64decode({base64.b64encode(PIXEL).decode()!r}), format='png'))"
)


@pytest.fixture
def claude_env(kernel_env: dict[str, str], server: SSEServer) -> dict[str, str]:
    kernel_env.update(
        ANTHROPIC_API_KEY=API_KEY, ANTHROPIC_BASE_URL=server.url, AGENTCELL_MODEL="anthropic:claude-sonnet-4-5"
    )
    return kernel_env


def _last_user(body: dict[str, Any]) -> list[dict[str, Any]]:
    message = body["messages"][-1]
    assert message["role"] == "user"
    content = message["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def _text(body: dict[str, Any]) -> str:
    """Every text the request's messages carry, in order."""
    texts = []
    for message in body["messages"]:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        texts += [b["text"] for b in blocks if b.get("type") == "text"]
    return "\n".join(texts)


SECRET = "s3cr3t-service-t0ken-value"


def test_code_cells_source_output_traceback_image_and_variables_reach_the_next_request(
    claude_env: dict[str, str], server: SSEServer
) -> None:
    server.queue(sse_reply("anthropic_text.sse"))
    claude_env["MY_SERVICE_TOKEN"] = SECRET
    with running_kernel(claude_env) as (_, kc):
        assert execute(kc, "%config AgentCell.renderer = 'markdown'").status == "ok"
        leak = execute(kc, "%%python\nimport os\nservice = os.environ['MY_SERVICE_TOKEN']\nprint(service)")
        assert SECRET in leak.stdout  # the user's own cell shows it; nothing of agentcell's may
        assert SECRET not in execute(kc, "%context").stdout
        built = execute(
            kc,
            "%%python\nsales_by_region = {'north': 120, 'south': 80}\nprint('regions:', len(sales_by_region))\n"
            "sales_by_region",
            cell_id="build",
        )
        assert built.status == "ok"
        failed = execute(kc, "%%python\nratio = 1 / 0", cell_id="fail")
        assert failed.status == "error"
        shown = execute(kc, IMAGE_CELL, cell_id="plot")
        assert shown.status == "ok" and shown.displays  # the front end got the image
        turn = execute(kc, "What happened in the cells above?", cell_id="ask")
        assert turn.status == "ok", turn.reply
    [request] = server.requests
    blocks = _last_user(request.body)
    text = "\n".join(b["text"] for b in blocks if b["type"] == "text")
    # The source, the output (stdout and Out[n]), the traceback without ANSI codes, the variables.
    assert "sales_by_region = {'north': 120, 'south': 80}" in text
    assert "regions: 2" in text
    assert "{'north': 120, 'south': 80}" in text.split("Out[")[1]
    assert "ZeroDivisionError" in text and "division by zero" in text and "\x1b[" not in text
    assert "- sales_by_region: dict, length 2" in text
    assert "base64" not in text.split("[The user's variables now]")[1]  # modules are left out
    # The image as an image block, before the question, which comes last.
    images = [b for b in blocks if b["type"] == "image"]
    assert [i["source"]["media_type"] for i in images] == ["image/png"]
    assert base64.b64decode(images[0]["source"]["data"]) == PIXEL
    assert blocks[-1]["type"] == "text" and blocks[-1]["text"].strip() == "What happened in the cells above?"
    # Named variables: the agent may look at one more closely, read-only.
    assert "inspect_variable" in [tool["name"] for tool in request.body["tools"]]
    # Secrets are scrubbed from the context like from everything else: the output and the variable's value.
    assert SECRET not in json.dumps(request.body) and "[redacted]" in text


def test_an_edited_cell_run_again_replaces_its_old_output_and_context_off_sends_none(
    claude_env: dict[str, str], server: SSEServer
) -> None:
    server.queue(*(sse_reply("anthropic_text.sse") for _ in range(3)))
    with running_kernel(claude_env) as (_, kc):
        assert execute(kc, "%config AgentCell.renderer = 'markdown'").status == "ok"
        assert execute(kc, "%%python\nprint('first version', 6 * 7)", cell_id="c1").status == "ok"
        assert execute(kc, "Look at it.", cell_id="p1").status == "ok"
        assert execute(kc, "%%python\nprint('second version', 6 * 9)", cell_id="c1").status == "ok"
        assert execute(kc, "And now?", cell_id="p2").status == "ok"
        said = execute(kc, "%context off")
        assert said.stdout.startswith("context off")
        assert execute(kc, "%%python\nprint('not for the model', 1 + 1)", cell_id="c2").status == "ok"
        shown = execute(kc, "%context").stdout
        assert "would send nothing from the notebook" in shown
        assert execute(kc, "Anything?", cell_id="p3").status == "ok"
    first, second, third = (r.body for r in server.requests)
    assert "first version" in _text(first)
    # The cell ran again: the model sees its latest run only, where it ran.
    assert "second version" in _text(second) and "first version" not in _text(second)
    assert "second version" in "\n".join(b["text"] for b in _last_user(second) if b["type"] == "text")
    # Off: nothing of the notebook is sent, neither the cell nor the variables.
    assert "not for the model" not in _text(third)
    assert "[The user ran" not in json.dumps(_last_user(third))


def test_a_5_mb_output_is_capped_with_a_note_and_a_model_without_images_gets_a_placeholder(
    claude_env: dict[str, str], server: SSEServer
) -> None:
    server.queue(sse_reply("anthropic_text.sse"))
    with running_kernel(claude_env) as (_, kc):
        assert execute(kc, "%config AgentCell.renderer = 'markdown'").status == "ok"
        assert execute(kc, "%model anthropic:claude-sonnet-4-5 images=false").status == "ok"
        big = execute(kc, "%%python\nprint('START' + 'x' * 5_000_000 + 'END')", cell_id="big", timeout=60)
        assert big.status == "ok"
        assert execute(kc, IMAGE_CELL, cell_id="plot").status == "ok"
        assert execute(kc, "Summarise.", cell_id="ask").status == "ok"
    [request] = server.requests
    blocks = _last_user(request.body)
    text = "\n".join(b["text"] for b in blocks if b["type"] == "text")
    assert len(json.dumps(request.body)) < 30_000  # the default cell cap is 10,000 characters
    assert "START" in text and "END" in text  # both ends kept
    assert "characters cut here (AgentCell.context_cell_chars)" in text
    assert not [b for b in blocks if b["type"] == "image"]
    assert "[an image the notebook showed (image/png); this model takes no image input]" in text


def test_in_another_ipython_kernel_every_ordinary_cell_reaches_the_next_agent_cell(
    claude_env: dict[str, str], server: SSEServer
) -> None:
    server.queue(sse_reply("anthropic_text.sse"))
    with running_kernel(claude_env, kernel_name="python3") as (_, kc):
        assert execute(kc, "%load_ext agentcell").status == "ok"
        assert execute(kc, "%config AgentCell.renderer = 'markdown'").status == "ok"
        assert execute(kc, "answer = 41 + 1\nprint('the answer is', answer)", cell_id="code").status == "ok"
        assert execute(kc, "%context").stdout.count("[The user ran code cell") == 1  # not itself, not %config
        assert execute(kc, "%%agent\nWhat is the answer?", cell_id="ask").status == "ok"
    [request] = server.requests
    text = "\n".join(b["text"] for b in _last_user(request.body) if b["type"] == "text")
    assert "answer = 41 + 1" in text and "the answer is 42" in text and "- answer: int, 42" in text
    assert "%load_ext" not in text and "%config" not in text and "%%agent" not in text
    # %%agent in IPython proposes cells by default too: the tool, and the cell's id beside it.
    assert "notebook_edit" in [t["name"] for t in request.body["tools"]] and "(cell id: code)" in text
