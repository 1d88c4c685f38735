"""Skills offered to the gateway's clients: the MCP Skills extension (SEP-2640).

``handlers`` serves ``skills/list``, ``skills/get``, their files and directories for
what the runtime's skills groups hold; ``served`` is how a skill looks as served (the
gateway's own ``skill://`` URIs, the entry, a file's contents).
"""

from greenroom_gateway.skills.handlers import GatewaySkills

__all__ = ["GatewaySkills"]
