"""Prompt caching through the real kernel: notebook cells on a Claude model against the loopback Anthropic
server that emulates the API's prefix cache (``tests/providers/prefix_cache.py``)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ..providers.conftest import API_KEY, SSEServer
from ..providers.prefix_cache import PrefixCache, Turn, answer, prefix_blocks
from .conftest import execute, running_kernel

pytestmark = pytest.mark.slow


def _ttls(body: dict[str, Any]) -> list[str]:
    return [b["cache_control"].get("ttl", "5m") for b in prefix_blocks(body) if "cache_control" in b]


def test_cells_cache_by_default_show_the_saving_and_config_sets_the_ttl_or_turns_it_off(
    kernel_env: dict[str, str], server: SSEServer
) -> None:
    prefix = PrefixCache()
    server.queue(*(answer(prefix, Turn(text=f"Answer {n}.")) for n in range(5)))
    kernel_env.update(
        ANTHROPIC_API_KEY=API_KEY, ANTHROPIC_BASE_URL=server.url, AGENTCELL_MODEL="anthropic:claude-sonnet-4-5"
    )
    with running_kernel(kernel_env) as (_, kc):
        assert execute(kc, "%config AgentCell.renderer = 'markdown'").status == "ok"
        first = execute(kc, "Question one?")
        assert first.final_markdown.startswith("Answer 0.")
        assert "more for cache writes" in first.final_markdown  # the first request wrote the prefix
        second = execute(kc, "Question two?")
        # The transcript's line (the saved notebook's fallback too): the turn read the prefix back.
        # The Markdown fallback escapes each $ so that no viewer typesets it as math.
        said = second.final_markdown.replace("\\$", "$")
        assert re.search(r"· turn \$[\d.]+ \(uncached \$[\d.]+, saved \$[\d.]+ by cache\)", said)
        usage = execute(kc, "%usage").displays[0]["text/markdown"]
        assert "prompt cache, latest turn" in usage and "by cache" in usage
        assert execute(kc, "%config AgentCell.cache = 'off'").status == "ok"
        assert execute(kc, "Question three?").final_markdown.startswith("Answer 2.")
        assert execute(kc, "%config AgentCell.cache = '1h'").status == "ok"
        assert execute(kc, "Question four?").final_markdown.startswith("Answer 3.")
        bad = execute(kc, "%config AgentCell.cache = 'forever'")
        # IPython's %config reports a refused value on stderr and keeps the setting as it was.
        assert "expected any of ['5m', '1h', 'off'], not the str 'forever'" in bad.stderr
        assert execute(kc, "Question five?").final_markdown.startswith("Answer 4.")
    bodies = [r.body for r in server.requests]
    assert len(bodies) == 5
    assert _ttls(bodies[0]) == ["5m", "5m"]  # tools + system, and the latest turn
    assert _ttls(bodies[1]) == ["5m", "5m", "5m"]  # and the previous turn, read back
    assert prefix.served[1].cache_read == prefix.served[0].write_5m > 0
    assert _ttls(bodies[2]) == [] and prefix.served[2].cache_read == 0
    assert _ttls(bodies[3]) == ["1h", "1h", "1h"] == _ttls(bodies[4])  # a bad value changed nothing
