"""lab: ``greenroom eval`` and ``greenroom bench``, what deferral and learned priors are
worth, measured on your own model and tools.

The lab is an application of the kernel, not a part of any run: its plugin only adds the
two commands (``greenroom_cli_commands``), and what they measure runs in runtimes built
from configs, like any user's agent. Its second level: ``eval/`` (task-level evaluation:
tasks, arms, the simulated agent, the runner, the report), ``bench/`` (one scripted
session replayed under each strategy), ``costing`` (prompt-cache billing, shared by both),
``plots`` and ``cli``.

It is the one package that may read other plugins' public faces and name their config
keys: an arm's config sets ``[plugins.deferred-tools]`` and ``[plugins.priors-persistence]``,
and the replay runs ``greenroom_deferred``'s plugin with its tool names. It imports
``greenroom``, ``greenroom.kit`` and those plugins' top-level packages only; no package
imports the lab (tests/test_layout.py).

Registered through the ``greenroom.plugins`` entry point as ``lab``.
"""

from greenroom_lab.plugin import LabPlugin

__all__ = ["LabPlugin"]
