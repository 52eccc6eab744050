"""Use the executorch_espnn package of the platform checkout, when the platform is one.

The platform folder cannot go on sys.path: its platform.py would shadow Python's `platform`
module.  So the package is registered by location instead, ahead of any installed copy.

As a program, `python checkout.py PLATFORM_DIR MODULE ARGS...` runs `python -m MODULE ARGS...`
with that package: how the builder runs the package's tools in a child process.
"""

from __future__ import annotations

import importlib.util
import runpy
import sys
from pathlib import Path

PACKAGE = "executorch_espnn"


def package_dir(root: Path) -> Path | None:
    pkg = root / PACKAGE
    return pkg if (pkg / "__init__.py").is_file() else None


def use_checkout_package(root: Path) -> bool:
    """Make `import executorch_espnn` load root/executorch_espnn; False when there is none."""
    pkg = package_dir(root)
    if pkg is None:
        return False
    loaded = sys.modules.get(PACKAGE)
    if loaded is not None:
        return Path(getattr(loaded, "__file__", "") or "").resolve().parent == pkg.resolve()
    spec = importlib.util.spec_from_file_location(
        PACKAGE, pkg / "__init__.py", submodule_search_locations=[str(pkg)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = module
    spec.loader.exec_module(module)
    return True


def main(argv: list[str]) -> None:
    root, module, *args = argv
    use_checkout_package(Path(root))
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
