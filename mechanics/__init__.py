"""Constrained dynamics of mechanisms as Gaussian factor graphs (GPLC).

Depends on ``factorgraph`` and ``elimination``.
"""
