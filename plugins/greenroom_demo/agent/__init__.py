"""The offline demo agent: an on-call assistant with 191 tools and a scripted planner.

Shipped inside the package so ``greenroom demo`` works from a plain ``pip install``;
``examples/demo/demo.toml`` extends this config for ``greenroom run`` and ``inspect``.
"""
