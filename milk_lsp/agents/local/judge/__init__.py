"""The judge of a local turn: whether the local model did what was asked, by evidence.

Evidence, never the model's or the user's wording: what the workspace defines and holds
(`asked`: the names and files a request names, in any human language), what the turn's
tools showed, the files' parses after each edit (`checks`), the diff against the texts the
request quotes or writes as code (`edit_intent`), how much of the workspace a request
reaches (`scope`), the model's explicit `finish` call (its intent, outcome and citations,
checked by `milk_lsp.guided.verify` as a guided answer is), and the signals of a turn going
wrong (`watch`). No table of phrases of any language decides a verdict.
"""
