"""leaderboard.html as a browser renders it: a headless Chromium screenshot.

The Chromium driver is the page test's (tests/chromium.py: DevTools over a pipe, Debian's
``chromium`` package, no network). The picture is cut at the page's "Run record"
heading: below it is the run's JSON, long and specific to this build's folders.
"""

from __future__ import annotations

import base64
from pathlib import Path

# a laptop's window: the table is wider and scrolls sideways, as a reader sees it; its
# whole width (about 2,500 px) would be shrunk on the docs page past reading
WIDTH, HEIGHT = 1400, 900

# the box from the page's top left to the bottom of the part worth showing: the
# window's width, down to the heading of the run record (or the whole page)
CLIP = """(function () {
  var doc = document.documentElement;
  var cut = Array.from(document.querySelectorAll('h2')).find(
      function (h) { return h.textContent.trim() === 'Run record'; });
  var bottom = cut ? cut.getBoundingClientRect().top + window.scrollY - 8 : doc.scrollHeight;
  return [Math.min(doc.scrollWidth, window.innerWidth), Math.ceil(bottom)];
})()"""


NO_CHROMIUM = (
    "leaderboard.png is a Chromium screenshot of leaderboard.html and no Chromium was "
    "found (/usr/bin/chromium or chromium on PATH): run `make chromium`"
)


class NoChromium(RuntimeError):
    """Chromium is not installed where the page test looks for it."""


def leaderboard(html: Path, png: Path) -> None:
    """Render ``html`` (a pool's leaderboard.html) and write the PNG ``png``.

    Raises:
        NoChromium: no Chromium to render with (``make chromium`` installs Debian's).
        TimeoutError: Chromium did not load the page or answer in time.
    """
    from tests.chromium import Browser, chromium_path

    if chromium_path() is None:
        raise NoChromium(NO_CHROMIUM)
    with Browser(width=WIDTH, height=HEIGHT) as browser:
        browser.open(html.resolve().as_uri())
        width, height = browser.evaluate(CLIP)
        shot = browser.call(
            "Page.captureScreenshot",
            format="png",
            captureBeyondViewport=True,
            clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
        )
    png.write_bytes(base64.b64decode(shot["data"]))
