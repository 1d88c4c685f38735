"""The replayed-session benchmark of the deferred-tools strategies (``greenroom bench
sessions``): ``replay`` runs one scripted session per configuration, ``costing`` bills
it as providers do, ``report`` prints and plots the result, ``cli`` is the command.

Nothing is imported here, so adding the command at CLI start-up costs no more than the
command's own module.
"""
