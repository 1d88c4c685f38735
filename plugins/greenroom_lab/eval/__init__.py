"""Task-level evaluation (``greenroom eval``): what deferral and learned priors are worth
in tasks, on your own model and tools.

``tasks`` reads task files and draws the session stream; ``arms`` writes each arm's
config; ``agent`` is the simulated agent (with ``reading``, what it reads in a request,
``matching`` and ``instances``); ``record`` watches each run and answers catalog tools;
``checks`` judges a request (its task's checker, bounded); ``window`` holds requests to
the context window; ``runner`` runs an arm's sessions, ``results`` keeps them,
resumably; ``plan`` checks an evaluation and ties them together (``prepare``,
``evaluate``), seed by seed; ``report`` prints, with the spread over seeds.
The command is ``greenroom_lab.cli``. Nothing is imported here, so the CLI pays only for
what runs.
"""
