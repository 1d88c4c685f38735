"""Index parts built in a second process, beside the ones this process builds (``side``),
and the child process that builds them (``child``)."""
