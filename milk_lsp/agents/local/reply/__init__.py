"""One reply of the local model as it streams: its events folded (`stream.py`), the tool
calls in it, streamed or written as text (`tool_calls.py`, `tool_arguments.py`), and a
reply that runs away, ended as it streams (`runaway.py`)."""
