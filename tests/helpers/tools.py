"""The project's generator scripts (``tools/*.py``) loaded as modules, without touching sys.path."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from tests.helpers.captures import ROOT


def load(name: str) -> ModuleType:
    """``tools/NAME.py`` as the module ``tools_NAME`` (loaded once)."""
    key = f"tools_{name}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    spec.loader.exec_module(module)
    return module
