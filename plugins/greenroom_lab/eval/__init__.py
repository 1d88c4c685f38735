"""Task-level evaluation (``greenroom eval``): what deferral and learned priors are worth
in tasks, on your own model and tools.

``tasks`` reads task files and draws the session stream; ``arms`` writes each arm's
config; ``agent`` is the simulated agent (with ``matching`` and ``instances``);
``record`` watches each run and answers catalog tools; ``checks`` judges a session
(its task's checker, bounded); ``runner`` runs an arm's sessions, resumably; ``plan``
checks an evaluation and ties them together (``prepare``, ``evaluate``); ``report`` prints.
The command is ``greenroom_lab.cli``. Nothing is imported here, so the CLI pays only for
what runs.
"""
