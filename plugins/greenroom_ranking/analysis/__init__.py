"""Ranking beyond one flat document and one query: fielded BM25 documents built from what a
tool already says (``fields``), long requests split into the tasks they ask for
(``split``), and server-then-tool routing over a catalog's groups (``routing``)."""
