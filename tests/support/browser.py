"""Debian's chromium as the browser tests start it (never a downloaded browser): headless, no sandbox (root),
and none of the background connections a closed network would refuse."""

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
