"""Views of gaussgraph objects: graphviz renderings, comparison tables, the command line.

Reads the public objects of ``factorgraph``, ``elimination`` and ``mechanics``;
nothing imports ``viz``.
"""
from factorgraph import __version__

__all__ = ["__version__"]
