"""What the model-zoo scripts share: the repository root, Benchmarks/peers on the import path, and
loading a sibling script whose file name has a dash as a module (zoo-check.py, compare-opencv.py)."""
import importlib.util
import os
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(REPO, "Benchmarks", "peers"))


def script(name):
    """scripts/NAME.py as a module."""
    spec = importlib.util.spec_from_file_location(name.replace("-", "_"), os.path.join(REPO, "scripts", name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
