"""Done-when for issue 31: `scoreaudit view` as a real server, driven by real Chromium through selenium.

The server is started as a subprocess on a free port (it prints the URL), Chromium clicks from the
cell list to a cell to an image and on to the comparison, each page is checked for what it shows,
the cell page is photographed (artifacts/view/cell.png, the README's screenshot), and Ctrl-C stops it.
chromedriver is given explicitly, so selenium-manager downloads nothing.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

CHROMIUM = next((p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser") if os.path.exists(p)), None)
DRIVER = "/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver") else None
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(CHROMIUM is None or DRIVER is None,
                                 reason="Debian chromium and chromium-driver are not installed")]
webdriver = pytest.importorskip("selenium.webdriver")
pytest.importorskip("starlette")

ROOT = Path(__file__).resolve().parents[2]
CHANGED = "H2/planted_dir/real"


def artifacts() -> Path:
    d = Path(os.environ.get("SCOREAUDIT_ARTIFACTS") or ROOT / "artifacts") / "view"
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture
def server(two_bundles):
    a, b = two_bundles
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "scoreaudit", "view", str(a), str(b)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    url, lines, deadline = None, [], time.monotonic() + 120
    while url is None and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith("serving on "):
            url = line.split()[2]
    try:
        assert url and url.startswith("http://127.0.0.1:"), "".join(lines)
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def browser():
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1000",
                "--force-device-scale-factor=1", "--no-first-run", "--disable-extensions"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(DRIVER), options=opts)


def test_click_from_cells_to_a_cell_to_an_image_then_stop(server, two_bundles):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    proc, url = server
    a, _ = two_bundles
    cells = pd.read_parquet(a / "tables" / "cells.parquet")
    port = int(url.rstrip("/").rsplit(":", 1)[1])
    drv = browser()
    try:
        wait = WebDriverWait(drv, 120)
        drv.get(url)  # two bundles: the index lists both
        links = drv.find_elements(By.CSS_SELECTOR, "table.list tbody td a")
        title = json.loads((a / "results.json").read_text())["title"]
        assert [x.text for x in links] == [title, title]
        links[0].click()
        # the cell list; the banner turns from "Verifying…" to "Verified" once verify is done (view.js polls)
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#verify:not(.verify-pending)")))
        banner = drv.find_element(By.ID, "verify")
        assert "verify-ok" in banner.get_attribute("class"), banner.text  # what verify found, if it failed
        assert banner.text.startswith("Verified:")
        listed = [e.text for e in drv.find_elements(By.CSS_SELECTOR, "#cells a.cell-link")]
        assert listed == cells["id"].tolist()
        drv.find_element(By.LINK_TEXT, CHANGED).click()

        wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, "h1.cell-id"), CHANGED))
        row = cells.set_index("id").loc[CHANGED]
        assert drv.find_element(By.CSS_SELECTOR, "p.sentence").text == row["sentence"]
        from scoreaudit.numfmt import ci, num

        assert drv.find_element(By.ID, "estimate").text == num(row["estimate"])
        assert drv.find_element(By.ID, "interval").text.startswith(ci(row["ci_low"], row["ci_high"]))
        bars = drv.find_elements(By.CSS_SELECTOR, "figure.hist svg rect.bar")
        assert bars and all(b.size["height"] > 0 for b in bars)
        contributors = drv.find_elements(By.CSS_SELECTOR, "#contributors a.image-link")
        assert contributors
        shot = drv.find_element(By.TAG_NAME, "body")
        drv.set_window_size(1280, max(1000, shot.size["height"] + 40))
        png = artifacts() / "cell.png"
        drv.save_screenshot(str(png))
        assert png.stat().st_size > 20_000
        first = contributors[0].text  # "real / astro_00N"
        contributors[0].click()

        wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, "h1.image-id"), first))
        arm, iid = (s.strip() for s in first.split("/"))
        scores = pd.read_parquet(a / "tables" / "scores.parquet")
        scores = scores[(scores["arm"] == arm) & (scores["image_id"] == iid)]
        shown = drv.find_elements(By.CSS_SELECTOR, "#scores tbody tr")
        assert len(shown) == len(scores.groupby(["operator", "dose"]))
        heads = [e.text for e in drv.find_elements(By.CSS_SELECTOR, "#scores thead th")]
        assert heads[2:] == sorted(scores["scorer"].unique())
        assert drv.find_elements(By.CSS_SELECTOR, "#measures tbody tr")
        drv.save_screenshot(str(artifacts() / "image.png"))

        drv.find_element(By.LINK_TEXT, "compare").click()  # the two bundles side by side
        wait.until(ec.presence_of_element_located((By.ID, "n-changed")))
        changed = [r.find_element(By.TAG_NAME, "a").text for r in drv.find_elements(By.CSS_SELECTOR, "#compare tr.changed")]
        assert CHANGED in changed
        drv.save_screenshot(str(artifacts() / "compare.png"))
        severe = [e for e in drv.get_log("browser") if e.get("level") == "SEVERE"]
        assert severe == []  # no script error, no Content-Security-Policy refusal of the app's own files
    finally:
        drv.quit()

    proc.send_signal(signal.SIGINT)  # Ctrl-C
    rc = proc.wait(30)
    assert rc == 0, proc.stderr.read()
    assert proc.stdout.read().strip().endswith("stopped")
    with socket.socket() as s:  # the port is free again
        assert s.connect_ex(("127.0.0.1", port)) != 0
