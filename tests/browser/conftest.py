"""Browser journeys: Debian's Chromium driven by playwright's sync API against ``live_server``.

One Chromium and one fresh context (cookies, viewport) per test. Each journey takes
screenshots with ``Journey.snap`` into ``test-artifacts/<journey>/NN-name.png``, and every page it
snaps is checked for the accessibility basics (see ``tests/browser/a11y.py``): labelled controls
and no horizontal scrolling at 375 px.
"""

import os
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connections

from tests.browser.a11y import accessibility_problems
from tests.conftest import chromium_path
from tests.factories import PASSWORD

# playwright's sync API runs an event loop in this thread; Django's ORM, called by the test's own
# setup code between browser steps, refuses to run beside one unless told it is safe (it is: the
# loop is playwright's, and the ORM calls are the test's, made synchronously).
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

ARTIFACTS = Path(settings.BASE_DIR) / "test-artifacts"
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 375, "height": 800}
# A screenshot is an artifact, not a check: a long page's full-page capture took over the
# default 30 s on two cores busy with the calibration suite (CI, 6 December), so it gets longer.
SCREENSHOT_TIMEOUT_MS = 120_000


@pytest.fixture
def chromium():
    """A headless Chromium (Debian's) for one test; skipped by the root conftest's marker rule
    when it is absent. Not shared across tests: playwright's sync API keeps an event loop
    running in this thread while it is open, which would break any other test that starts
    playwright itself (tests/protocols/test_browser.py) or Django's async-unsafe checks."""
    path = chromium_path()
    if not path:
        pytest.skip("needs Debian's chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=path, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        yield browser
        browser.close()
        # ORM calls made while playwright's loop ran got their own connection (Django keys
        # connections by async context); close it here, where the test's calls were made, or
        # PostgreSQL would refuse to drop the test database at the end of the run.
        connections.close_all()


class Journey:
    """A browser tab for one journey: navigation relative to the live server, sign-in, and
    numbered screenshots, each followed by the accessibility check of the page."""

    def __init__(self, *, browser, base_url: str, name: str):
        self.base_url = base_url
        self.name = name
        self.folder = ARTIFACTS / name
        self.folder.mkdir(parents=True, exist_ok=True)
        for old in {*self.folder.glob("*.png"), *self.folder.glob("failed.*")}:
            old.unlink()
        self.context = browser.new_context(viewport=DESKTOP, accept_downloads=True)
        self.context.set_default_timeout(30_000)
        self.page = self.context.new_page()
        self.count = 0
        self.checked: list[str] = []

    def go(self, path: str):
        return self.page.goto(self.base_url + path)

    def sign_in(self, username: str, password: str = PASSWORD) -> None:
        """Sign out whoever is signed in, then sign in through the login form."""
        self.context.clear_cookies()
        self.go("/login/")
        self.page.get_by_label("Username").fill(username)
        self.page.get_by_label("Password").fill(password)
        self.click_and_wait(self.page.get_by_role("button", name="Sign in"))
        assert "/login/" not in self.page.url, f"{username} could not sign in"

    def autofocused(self) -> None:
        """Wait until the page's ``autofocus`` has given an element the focus. Browsers apply it
        after the load event, and on a loaded machine a key pressed at once goes to the body."""
        self.page.wait_for_function(
            "() => document.activeElement && document.activeElement !== document.body"
        )

    def click_and_wait(self, locator) -> None:
        """Click ``locator`` (a submit button or a link) and wait for the page it loads."""
        with self.page.expect_navigation():
            locator.click()

    def settle(self) -> None:
        """Wait until htmx has no request pending or in flight (the draft's autosave waits 800 ms
        after typing): the live server's in-memory SQLite refuses a second writer at once. The
        focused field is blurred first, or its ``change`` autosave would start on the next
        click, beside the request that click sends."""
        self.page.evaluate("() => document.activeElement && document.activeElement.blur()")
        self.page.wait_for_timeout(900)
        self.page.wait_for_function("() => !document.querySelector('.htmx-request')")

    def snap(self, name: str) -> Path:
        """Save ``NN-name.png`` and check the page's accessibility basics (fails the test)."""
        self.count += 1
        path = self.folder / f"{self.count:02d}-{name}.png"
        self.page.screenshot(path=str(path), full_page=True, timeout=SCREENSHOT_TIMEOUT_MS)
        self.check_accessibility()
        return path

    def tour(self, name: str, *, phone: bool = False) -> None:
        """Save the visible part of the page as ``<name>.png`` in ``$PREREGISTRY_TOUR_DIR`` when
        that is set: how the README's tour screenshots in docs/img are made (``phone``: the
        first screen of a 375 px wide viewport)."""
        folder = os.environ.get("PREREGISTRY_TOUR_DIR")
        if folder:
            Path(folder).mkdir(parents=True, exist_ok=True)
            # The viewport's width (a phone's 375 px for a phone screenshot), its first screen.
            size = PHONE if phone else (self.page.viewport_size or DESKTOP)
            height = 760 if size["width"] >= DESKTOP["width"] else size["height"]
            clip = {"x": 0, "y": 0, "width": size["width"], "height": height}
            self.page.screenshot(
                path=str(Path(folder) / f"{name}.png"), clip=clip, timeout=SCREENSHOT_TIMEOUT_MS
            )

    def check_accessibility(self) -> None:
        problems = accessibility_problems(self.page)
        self.checked.append(self.page.url)
        assert not problems, f"{self.page.url}: " + "; ".join(problems)

    def close(self) -> None:
        self.context.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item.journey_failed = report.failed
    return report


@pytest.fixture
def journey(request, chromium, live_server):
    """A ``Journey`` named after the test (``test_pi_…`` → ``pi_…``). When the test fails, the
    page as it was is kept beside the screenshots (``failed.png``, ``failed.html``)."""
    name = re.sub(r"^test_", "", request.node.name)
    tab = Journey(browser=chromium, base_url=live_server.url, name=name)
    yield tab
    if getattr(request.node, "journey_failed", False):
        tab.page.screenshot(
            path=str(tab.folder / "failed.png"), full_page=True, timeout=SCREENSHOT_TIMEOUT_MS
        )
        (tab.folder / "failed.html").write_text(tab.page.content())
    tab.close()
