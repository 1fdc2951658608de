"""Where the data shipped beside the code lives: the scenario files, the Space's assets and the committed
training results (results/training/<env>/: the evidence the Training tab shows and the adapter the local agent
loads).

In a checkout (and an editable install) they are the top-level folders `scenarios/`, `assets/` and `results/`;
a wheel carries copies of them inside the package, under `aaos/_data/` (setup.py's build step puts them there).
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
SHIPPED = PACKAGE / "_data"
CHECKOUT = PACKAGE.parent
DATA_FOLDERS: tuple[str, ...] = ("scenarios", "assets", "results")


def data_dir(name: str) -> Path:
    """The folder `name` (one of DATA_FOLDERS): the wheel's copy if installed from one, else the checkout's."""
    if name not in DATA_FOLDERS:
        raise ValueError(f"unknown data folder {name!r}; choose one of: {', '.join(DATA_FOLDERS)}")
    shipped = SHIPPED / name
    return shipped if shipped.is_dir() else CHECKOUT / name
