"""ember.viz: pictures of the backward graph (DOT text; SVG through Graphviz's ``dot``)."""

from .dot import INSTALL_HINT, make_dot, to_svg
