"""IR passes. ``manager`` holds the Pass interface, the registry and the PassManager;
every other module here defines passes with ``@register_pass`` (see manager's docstring)."""
from .manager import (Pass, PassError, PassManager, get_pass, parse_pipeline, register_pass,
                      registered_passes)

__all__ = ["Pass", "PassError", "PassManager", "get_pass", "parse_pipeline", "register_pass",
           "registered_passes"]
