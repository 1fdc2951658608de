"""Build step that ships the top-level data folders (scenarios/, assets/, results/) inside the wheel, as aaos/_data/.

Everything else about the package is declared in pyproject.toml; aaos/data.py finds the folders at run time.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DATA_FOLDERS = ("scenarios", "assets", "results")


class BuildWithData(build_py):
    def run(self) -> None:
        super().run()
        for name in DATA_FOLDERS:
            target = Path(self.build_lib) / "aaos" / "_data" / name
            shutil.rmtree(target, ignore_errors=True)  # an earlier build's copy may hold files removed since
            shutil.copytree(Path(__file__).parent / name, target, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__"))


setup(cmdclass={"build_py": BuildWithData})
