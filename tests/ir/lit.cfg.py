"""lit configuration for gradc's FileCheck-style IR tests (tests/ir/*.mlir).

``%gradc`` runs this interpreter's ``python -m gradc``; ``filecheck`` (the PyPI
package) is found through the bin directory of that interpreter, put first on PATH.
"""
import os
import sys

import lit.formats

config.name = "gradc-ir"
config.test_format = lit.formats.ShTest()
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
config.excludes = ["Output"]

_repo = os.path.dirname(os.path.dirname(config.test_source_root))
config.substitutions.append(("%gradc", f'"{sys.executable}" -m gradc'))
config.environment["PATH"] = os.pathsep.join(
    [os.path.dirname(sys.executable), config.environment.get("PATH", os.environ.get("PATH", ""))])
config.environment["PYTHONPATH"] = os.pathsep.join(
    p for p in [_repo, os.environ.get("PYTHONPATH", "")] if p)
