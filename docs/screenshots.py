"""Regenerate the viewer's screenshots of the documentation from the shipped demo.

Runs ``experiments/quickstart.toml`` and ``experiments/regression-demo.toml`` into a
temporary store, serves it with ``evalkit view``, and photographs pages with the system's
Chromium (Playwright, as the browser tests drive it):

    python docs/screenshots.py            # writes docs/pages/images/*.png

Needs the test extras (``pip install -e '.[test]'``) and Chromium (``apt-get install
chromium``). The README shows ``compare.png``; the viewer's how-to ``compare.png`` and
``items.png``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "docs" / "pages" / "images"


def _run(store: Path, file: str, reports: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "evalkit", "run", str(ROOT / "experiments" / file), "--store",
         str(store), "--report-dir", str(reports), "--no-progress", "--json"],
        capture_output=True, text=True, check=False, cwd=ROOT,
    )  # fmt: skip
    if done.returncode not in (0, 1):
        raise SystemExit(f"{file}: {done.stderr}")
    return str(json.loads(done.stdout)["experiment_id"])


def main() -> None:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("no Chromium on this machine: apt-get install -y chromium")
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "demo.duckdb"
        baseline = _run(store, "quickstart.toml", Path(folder))
        candidate = _run(store, "regression-demo.toml", Path(folder))
        viewer = subprocess.Popen(
            [sys.executable, "-m", "evalkit", "view", "--store", store.name, "--port", "0",
             "--no-browser"],
            stdout=subprocess.PIPE, text=True, cwd=folder,
        )  # fmt: skip
        try:
            assert viewer.stdout is not None
            url = viewer.stdout.readline().split(" at ", 1)[1].split()[0]
            compare = f"{url}compare?baseline={baseline}&candidate={candidate}"
            shots = {
                "compare.png": (compare + "&scorer=exact", 1250),
                "runs.png": (url, 640),
                "item.png": (None, 1100),
            }
            IMAGES.mkdir(parents=True, exist_ok=True)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=chromium, headless=True)
                page = browser.new_page(viewport={"width": 1360, "height": 1000})
                for name, (address, height) in shots.items():
                    if address is None:  # the first item of the compare grid
                        page.goto(compare + "&scorer=exact")
                        page.locator("table.diff td.item a").first.click()
                        page.wait_for_load_state()
                    else:
                        page.goto(address)
                    page.set_viewport_size({"width": 1360, "height": height})
                    page.screenshot(path=str(IMAGES / name))
                    print(f"wrote {(IMAGES / name).relative_to(ROOT)}")
                # The top of the run's item table: the candidate's answers exact scored 0.
                page.set_viewport_size({"width": 1360, "height": 1000})
                page.goto(f"{url}experiments/{candidate}?scorer=exact&max=0.5")
                box = page.locator("#items").bounding_box()
                assert box is not None
                clip = {**box, "height": min(box["height"], 760)}
                page.screenshot(path=str(IMAGES / "items.png"), clip=clip, full_page=True)
                print(f"wrote {(IMAGES / 'items.png').relative_to(ROOT)}")
                browser.close()
        finally:
            viewer.terminate()
            viewer.wait(timeout=10)


if __name__ == "__main__":
    main()
