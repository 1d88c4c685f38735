"""Tool results on their way to the model: ``compaction`` (a JSON result minified, its empty
fields left out, no value changed) and ``fitting`` (compacted, then cut to ``[agent]
max_result_tokens``, where a plugin may keep the whole and say how to read the rest)."""
