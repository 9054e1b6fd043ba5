"""MkDocs hook: the docs' pictures, made fresh before the pages are read, and checked.

Before the build (once per MkDocs process: ``mkdocs serve`` makes them at its start, not
at every rebuild) ``python -m pictures docs/img/generated`` runs in a process of its own
(docs/_hooks/pictures/: the product's commands on small data, one Spark session, one
headless Chromium). The folder is git-ignored and emptied first, so a picture is never
one of an older build. A page that links ``img/generated/NAME`` which that run did not
make stops the build with the page's name, whether the link is new or the run failed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError

HOOKS = Path(__file__).resolve().parent
ROOT = HOOKS.parents[1]
LINK = re.compile(r"img/generated/([^)\s\"']+)")
_made: list[Path] = []  # the folder this process filled


def _folder(config) -> Path:  # noqa: ANN001 (MkDocs' config)
    return Path(config["docs_dir"]) / "img" / "generated"


def on_pre_build(config) -> None:  # noqa: ANN001 (MkDocs' API)
    """Make the pictures (the generator's progress on stderr).

    Raises:
        PluginError: the generator failed (its own error line is printed above).
    """
    folder = _folder(config)
    if folder in _made:
        return
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HOOKS), str(ROOT)])}
    done = subprocess.run([sys.executable, "-m", "pictures", str(folder)], cwd=ROOT, env=env)
    if done.returncode != 0:
        raise PluginError(
            f"the docs' pictures were not made (python -m pictures: exit {done.returncode}; "
            "its error is above). They need Java 17 and Chromium: make java chromium"
        )
    _made.append(folder)


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ANN001 (MkDocs' API)
    """The page as it is, once every picture it links was made by this build.

    Raises:
        PluginError: the page links a generated picture that does not exist.
    """
    folder = _folder(config)
    missing = sorted({name for name in LINK.findall(markdown) if not (folder / name).is_file()})
    if missing:
        made = ", ".join(sorted(os.listdir(folder))) if folder.is_dir() else "nothing"
        raise PluginError(
            f"{page.file.src_uri} links img/generated/{', '.join(missing)}, which the "
            f"picture generator (docs/_hooks/pictures/) did not make; it made: {made}"
        )
    return markdown
