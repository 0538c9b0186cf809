"""The README's picture: the first screen of a replication's report.html, taken by headless Chromium.

    python scripts/screenshot_report.py runs/demo/report.html docs/img/demo_report.png

Run it on the folder `make demo` wrote (runs/demo), so the picture shows the current report.
Needs Chromium (Debian: `apt-get install chromium`). The page is opened from a copy in a
temporary folder with no network access needed (the report is self-contained) and a throwaway
browser profile; the PNG is written to a temporary name and renamed into place.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
WIDTH, HEIGHT = 1280, 900  # a laptop's first screen


def browser() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    sys.exit("error: no Chromium found (Debian: apt-get install chromium)")


def screenshot(report: Path, png: Path, width: int = WIDTH, height: int = HEIGHT) -> None:
    if not report.is_file():
        sys.exit(f"error: {report}: no such report (run `make demo` first)")
    png.parent.mkdir(parents=True, exist_ok=True)
    tmp = png.with_name(f".{png.name}.tmp.png")
    with tempfile.TemporaryDirectory() as profile:
        cmd = [browser(), "--headless", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
               f"--user-data-dir={profile}", f"--window-size={width},{height}", f"--screenshot={tmp}",
               report.resolve().as_uri()]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            tmp.unlink(missing_ok=True)
            sys.exit("error: Chromium took more than 120 s")
    if r.returncode != 0 or not tmp.is_file() or tmp.stat().st_size == 0:
        tmp.unlink(missing_ok=True)
        last = (r.stderr.strip().splitlines() or ["no output"])[-1]
        sys.exit(f"error: Chromium did not write the screenshot ({last})")
    tmp.replace(png)
    print(png)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", type=Path, nargs="?", default=Path("runs/demo/report.html"))
    ap.add_argument("png", type=Path, nargs="?", default=Path("docs/img/demo_report.png"))
    ap.add_argument("--width", type=int, default=WIDTH)
    ap.add_argument("--height", type=int, default=HEIGHT)
    a = ap.parse_args()
    screenshot(a.report, a.png, a.width, a.height)


if __name__ == "__main__":
    main()
