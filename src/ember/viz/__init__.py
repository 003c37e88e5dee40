"""ember.viz: pictures of the backward graph (DOT text, SVG through Graphviz's ``dot``, and a
self-contained HTML page that needs no Graphviz), grouped by module with ``track_modules``.
Both pictures run top-down (inputs on top, the output at the bottom), put each module's label
where no edge runs and explain their colours in a legend."""

from .dot import INSTALL_HINT, DotGraph, make_dot, to_svg
from .html import to_html
from .modules import track_modules

__all__ = ["INSTALL_HINT", "DotGraph", "make_dot", "to_html", "to_svg", "track_modules"]
