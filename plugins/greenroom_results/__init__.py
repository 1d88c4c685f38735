"""read-result: a tool result over ``[agent] max_result_tokens`` is kept whole in the state
folder (bounded, removed with its session), and the model reads the rest by the id of the
call that made it with ``read_result(call_id, offset?, limit?, pattern?)``; a plugin reads
the same way with ``read_result(ctx, call_id, ...)`` (docs/concepts.md, "Results").

``kept``: the files, their bounds and their removal. ``reading``: a kept result read back by
lines or by a regular expression, bounded in what it returns and in time. ``plugin``: the
tool, and the hooks that keep a cut result and tie it to its session.

Registered through the ``greenroom.plugins`` entry point as ``read-result``; on by default.
"""

from greenroom_results.plugin import NAME, ReadResultConfig, ReadResultPlugin, ResultKept
from greenroom_results.reading import read_result

__all__ = ["NAME", "ReadResultConfig", "ReadResultPlugin", "ResultKept", "read_result"]
