"""Tool results on their way to the model.

``compaction``: a JSON result minified, its empty fields left out, no value changed.
``kept``: a result over ``[agent] max_result_tokens`` kept whole in the state folder,
bounded, and removed with its session. ``reading``: a kept result read back by lines or by
a regular expression, bounded in what it returns and in time. ``fitting``: the path a
result takes from the tool to the model (compacted, cut, kept). ``plugin``: the core
plugin ``read-result``, whose tool ``read_result`` reads what was kept.
"""
