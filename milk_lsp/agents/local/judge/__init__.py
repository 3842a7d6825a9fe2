"""The judge of a local turn: whether the local model did what was asked, by evidence.

Evidence, never the model's or the user's wording: what the workspace defines and holds
(`grounding`: the names a question asks about and what an answer claims, in any human
language and any programming language), what the turn's tools showed, the files' parses
after each edit (`checks`), the diff against what the request quotes or names
(`edit_intent`), the model's explicit `finish` call, and the signals of a turn going wrong
(`watch`). `answer.TurnGrounding` judges one turn's final answers and gives milk's own look
(`read_first` reads what a request or question names). Word lists per human language are
hints that only add checks (`grounding.hints`).
"""
