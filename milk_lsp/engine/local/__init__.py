"""The local part of a turn: the local model's run in either strategy (`part.py`, the agent
loop; `guided.py`, the guided turn), its events folded into the turn (`events.py`), its
time budget (`clock.py`) and what happens when it fails (`handoff.py`)."""
