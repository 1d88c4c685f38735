"""What the otel plugin keeps for one run, in the run (``Scope.RUN``): its open spans.

One plugin instance serves every run of a runtime (all the clients of a gateway at
once), so a run's spans live in the run's state, found through the ``ctx`` each hook is
given, and go with the run: nothing of a run stays on the plugin.
"""

from __future__ import annotations

from typing import Any

import attrs


@attrs.define(eq=False)
class OtelRun:
    """Run scope: ``trace`` is the run's ``greenroom_otel.spans.RunTrace`` once its
    ``run_start`` was seen (None for a preview, or before)."""

    trace: Any = None

    def __deepcopy__(self, memo: dict[int, Any]) -> OtelRun:
        # a run's snapshot copies its run state; open spans are not copied (nor copyable)
        return self
