"""Train teams of LLM agents with multi-agent reinforcement learning: one shared base, one LoRA adapter per agent.

Modules:

- `marl_llm.experiments.decoupling`: Does the task decide whether agents cooperate? PA-MAGRPO on a kitchen one agent can run alone and on one that forces hand-offs, every checkpoint audited (`experiments/02_run_audit`): reward, solo-carry, joint events, partner ablation."""

__version__ = "0.0.1"

# In a Jupyter kernel, importing any part of marl_llm gives every plotly figure an offline HTML copy next to
# plotly's mimetype (`core.records.use_offline_figures`), so rendered notebooks (nbconvert, Quarto, `make docs`) show it.
from .core import records as _records  # noqa: E402,F401
