"""Where each tool is placed, eager or deferred: the rules and thresholds at a session's
start (``rules``), what learning adds to the prompt across sessions (``learning``), and
when a tool promoted in a session goes back to deferred (``retention``)."""
