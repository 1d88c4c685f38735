"""demo: ``greenroom demo``, the offline showcase. An on-call agent with 191 tools, driven
by a scripted planner, handles an incident; the demo prints what the model saw at each
step against sending every schema. Run it twice: the second run starts the tools it
learned it needs eager and searches less.

The agent itself (config, catalog, tools, planner) ships in ``greenroom_demo/agent``; the
demo wires it by config alone, like any user's agent.
"""

from greenroom_demo.plugin import DemoPlugin

__all__ = ["DemoPlugin"]
