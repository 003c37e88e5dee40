"""ember.nn: modules, parameters, functional forms, initialisation and utilities."""

from . import functional, init, parallel, utils
from .modules import *  # noqa: F403
from .modules import Module
from .parallel import DataParallel
from .parameter import Buffer, Parameter
