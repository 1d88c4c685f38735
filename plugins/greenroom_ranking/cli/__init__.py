"""The ``greenroom rank`` commands (``commands.rank_app``): ``eval`` measures rankers on a
catalog with known answers; ``index`` builds a catalog's indexes ahead (``ahead``)."""
