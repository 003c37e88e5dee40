"""ember.nn: modules, parameters, functional forms, initialisation and utilities."""

from . import functional, init, utils
from .modules import *  # noqa: F403
from .modules import Module
from .parameter import Buffer, Parameter
