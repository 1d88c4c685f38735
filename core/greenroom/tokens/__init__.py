"""Token counts: the o200k encoder, counting texts and tool definitions, and the
accounting of whole requests."""
