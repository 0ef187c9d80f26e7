__version__ = "0.0.1"

# In a Jupyter kernel, importing any part of marl_llm gives every plotly figure an offline HTML copy next to
# plotly's mimetype (`core.records.use_offline_figures`), so rendered notebooks (nbconvert, Quarto, `make docs`) show it.
from .core import records as _records  # noqa: E402,F401
