"""The strategic games against PettingZoo's own AEC API test, one named test per game and seed.

(The notebook nbs/games/08_opponents.ipynb runs the same check once; this file makes the acceptance
criterion visible per game in pytest's output and exercises a few more seeds.)"""
import warnings

import numpy as np
import pytest
from pettingzoo.test import api_test

from marl_llm.games.strategic import STRATEGIC_GAMES, make_strategic_game
from marl_llm.games.opponents import OPPONENTS, opponent, play


@pytest.mark.parametrize("name", sorted(STRATEGIC_GAMES))
def test_api(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api_test(make_strategic_game(name), num_cycles=300)


@pytest.mark.parametrize("name", sorted(STRATEGIC_GAMES))
def test_seeded_and_forfeit(name):
    kinds = sorted(OPPONENTS[name])
    for s in range(5):                                   # same seed, same game
        a = play(make_strategic_game(name), [opponent(name, kinds[0]), opponent(name, kinds[-1])], seed=s)
        b = play(make_strategic_game(name), [opponent(name, kinds[0]), opponent(name, kinds[-1])], seed=s)
        assert a == b
    env = make_strategic_game(name, max_retries=1)                # one retry, then the offender forfeits
    env.reset(seed=0)
    first = env.agent_selection
    env.step(len(env.MOVES) + 3)
    assert not env.done and env.agent_selection == first and env.invalid[0] == 1
    env.step(-1)
    assert env.done and env.forfeit == 0 and env.returns[0] == env.FORFEIT[0] and env.score(0) == 0.0


def test_unknown_names():
    with pytest.raises(ValueError, match="valid:"):
        make_strategic_game("chess")
    with pytest.raises(ValueError, match="no 'equilibrium' opponent"):
        opponent("negotiation", "equilibrium")
