"""Headless Chromium (Debian's `/usr/bin/chromium`) driven over its DevTools protocol, for the dashboard.

Why DevTools and not `chromium --screenshot URL`: the dashboard sits behind the bearer token, and
a command-line navigation cannot send a header. Over the DevTools WebSocket the page's tab gets
`Authorization: Bearer ...` as an extra header (Network.setExtraHTTPHeaders), so the token never
goes into a URL, a log or the browser history. `open_page` loads one URL, reads every
`data-figure` of the page and writes a full-page screenshot.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--remote-debugging-port=0",
)
FIGURES_JS = (
    "JSON.stringify(Array.from(document.querySelectorAll('[data-figure]'), e => [e.dataset.figure, e.dataset.value]))"
)


@dataclass
class LoadedPage:
    status: int
    figures: list[tuple[str, str]]
    """Each `data-figure` path with its exact `data-value`, in page order."""
    text: str
    """The page's visible text."""


class _DevTools:
    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, session: str | None = None, timeout: float = 60, **params: Any) -> dict[str, Any]:
        message_id = next(self.ids)
        message: dict[str, Any] = {"id": message_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        self.ws.send(json.dumps(message))
        while True:
            answer = json.loads(self.ws.recv(timeout=timeout))
            if answer.get("id") == message_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return dict(answer.get("result") or {})
            self.events.append(answer)

    def wait_for(self, method: str, timeout: float = 60) -> dict[str, Any]:
        for i, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(i)
        while True:
            event = json.loads(self.ws.recv(timeout=timeout))
            if event.get("method") == method:
                return dict(event)
            self.events.append(event)


def open_page(
    url: str,
    *,
    token: str | None,
    screenshot: Path,
    width: int = 1400,
    height: int = 1000,
    most_height: int | None = None,
) -> LoadedPage:
    """Load `url` in a fresh headless Chromium (sending the bearer token, if any) and screenshot the whole page
    (its top `most_height` pixels when given)."""
    # Chromium's helper processes may still write to the profile for a moment after the browser exits.
    with tempfile.TemporaryDirectory(prefix="chromium-", ignore_cleanup_errors=True) as profile:
        proc = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its helpers too are ended with it
        )
        try:
            with connect(_devtools_url(proc), max_size=64 * 1024 * 1024, open_timeout=30) as ws:
                tools = _DevTools(ws)
                target = tools.call("Target.createTarget", url="about:blank")["targetId"]
                session = tools.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
                tools.call("Page.enable", session)
                tools.call("Network.enable", session)
                if token:
                    tools.call("Network.setExtraHTTPHeaders", session, headers={"Authorization": f"Bearer {token}"})
                tools.call("Page.navigate", session, url=url)
                response = tools.wait_for("Network.responseReceived")
                tools.wait_for("Page.loadEventFired")
                evaluated = tools.call("Runtime.evaluate", session, expression=FIGURES_JS, returnByValue=True)
                figures = [tuple(pair) for pair in json.loads(evaluated["result"]["value"])]
                text = tools.call("Runtime.evaluate", session, expression="document.body.innerText", returnByValue=True)
                metrics = tools.call("Page.getLayoutMetrics", session)
                full = metrics.get("cssContentSize") or metrics["contentSize"]
                tools.call(
                    "Emulation.setDeviceMetricsOverride",
                    session,
                    width=width,
                    height=min(int(full["height"]), most_height or int(full["height"])),
                    deviceScaleFactor=1,
                    mobile=False,
                )
                shot = tools.call(
                    "Page.captureScreenshot", session, format="png", captureBeyondViewport=most_height is None
                )
                screenshot.write_bytes(base64.b64decode(shot["data"]))
                return LoadedPage(
                    status=int(response["params"]["response"]["status"]),
                    figures=[(str(a), str(b)) for a, b in figures],
                    text=str(text["result"].get("value") or ""),
                )
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)


def _devtools_url(proc: subprocess.Popen[str]) -> str:
    """Chromium prints `DevTools listening on ws://...` on stderr once its port is open."""
    found: list[str] = []
    ready = threading.Event()

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            match = re.search(r"DevTools listening on (ws://\S+)", line)
            if match and not found:
                found.append(match.group(1))
                ready.set()
        ready.set()

    threading.Thread(target=pump, daemon=True).start()
    if not ready.wait(60) or not found:
        raise RuntimeError("chromium did not open its DevTools port within 60 s")
    return found[0]
