"""The replayed-session benchmark of the deferred-tools strategies (``greenroom bench
sessions``): ``replay`` runs one scripted session per configuration and bills it
(``greenroom_lab.costing``), ``report`` prints and plots the result. The command is
``greenroom_lab.cli``.

Nothing is imported here, so adding the command at CLI start-up costs no more than the
command's own module.
"""
