"""What the widget's first item tells the live footer: the model's output price, when it has one."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from agentcell.render.widget_renderer import output_price_mtok
from agentcell.usage import flat_pricing

from ..conftest import scripted_engine


def test_the_context_carries_the_output_price_per_million_tokens(db_path: Path) -> None:
    engine, _ = scripted_engine(db_path, pricing=flat_pricing(3, 15))
    with engine:
        agent = engine.agents.create(name="a", model="scripted")
        price = output_price_mtok(engine.sessions.create(agent=agent.id))
        assert price is not None and Decimal(price) == 15  # a decimal string the widget's money code reads


def test_a_model_without_a_known_price_has_none(db_path: Path) -> None:
    engine, _ = scripted_engine(db_path)
    with engine:
        unknown = engine.agents.create(name="b", model={"id": "nowhere:model-x"})
        assert output_price_mtok(engine.sessions.create(agent=unknown.id)) is None
