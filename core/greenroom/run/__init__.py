"""One run: what plugins see of it, its scope and policy, its tool calls, the bounds on what reaches the model."""
