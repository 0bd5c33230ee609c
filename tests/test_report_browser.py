"""The report in a real browser: Debian's headless Chromium, driven by Selenium and chromedriver.

Checks what a reader meets when opening index.html from disk: the page loads without a
console error, every chart image decodes (natural size above zero), nothing but data: URLs
is loaded, a screenshot can be taken, and a log line holding `<script>` shows as text.

Skipped with the reason when chromium/chromedriver are missing on a developer's machine;
under CI (`CI` set) their absence fails the test, since `.ci/run` installs them.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import SAMPLE_LOGS
from firedup.api import report as report_of

SAMPLES = SAMPLE_LOGS
SCRIPT = '<script>alert("firedup")</script>'
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1280,900")


def _missing() -> str | None:
    for tool in ("chromium", "chromedriver"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (Debian: apt-get install -y chromium chromium-driver; .ci/run does it)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    reason = _missing()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"the browser test must run in CI, but {reason}")
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(shutil.which("chromium"))
    profile = tempfile.mkdtemp(prefix="firedup-chromium-")
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(str(shutil.which("chromedriver"))))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def sample_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("browser") / "sample"
    report_of([str(SAMPLES)], out, by=["disable_cuda_graph"])
    return out / "index.html"


def _open(driver: Any, page: Path) -> list[dict[str, Any]]:
    driver.get_log("browser")  # drop what an earlier page left
    driver.get(page.resolve().as_uri())
    assert driver.execute_script("return document.readyState") == "complete"
    return list(driver.get_log("browser"))


def test_report_opens_without_errors_and_every_chart_decodes(browser: Any, sample_page: Path) -> None:
    logs = _open(browser, sample_page)
    assert [entry for entry in logs if entry["level"] in ("SEVERE", "WARNING")] == []
    images = browser.execute_script(
        "return Array.from(document.images).map(i => [i.alt, i.complete, i.naturalWidth, i.naturalHeight,"
        " i.getBoundingClientRect().width])")
    assert len(images) == 4, images
    for alt, complete, width, height, shown in images:
        assert complete and width > 0 and height > 0 and shown > 0, alt
        assert width >= 1100  # drawn at 1.5x for sharp text, shown at 1100 px at most
    # nothing was fetched but the page itself and its data: URLs
    fetched = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert all(name.startswith("data:") for name in fetched), fetched
    title = browser.execute_script("return document.querySelector('h1').innerText")
    assert title == "Startup report"
    png = browser.get_screenshot_as_png()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_a_script_in_a_log_shows_as_text(browser: Any, tmp_path: Path) -> None:
    text = (SAMPLES / "oom-in-cuda-graph.log").read_text()
    text = text.replace("CUDA out of memory.", f"CUDA out of memory. {SCRIPT}")  # whichever line is quoted
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "oom<img src=x onerror=alert(1)>.log").write_text(text)
    report_of([str(tmp_path / "logs")], tmp_path / "out")
    logs = _open(browser, tmp_path / "out" / "index.html")
    assert [entry for entry in logs if entry["level"] == "SEVERE"] == []
    assert browser.execute_script("return document.scripts.length") == 0
    body = browser.execute_script("return document.body.innerText")
    assert SCRIPT in body
    assert "oom<img src=x onerror=alert(1)>.log" in body
    # the only images are the charts: the file name did not become an element
    assert browser.execute_script("return Array.from(document.images).every(i => i.src.startsWith('data:'))")
