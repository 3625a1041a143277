"""``python -m rocmbuild.records.notifysend``: deliver one message to notification URLs with apprise.

Runs as a child of rocmbuild (notify.py starts it contained, with a time limit), so that a
notification service that hangs or floods can be killed whole and never holds the build's exit.
Reads ``{"urls": [...], "title": ..., "body": ..., "failed": bool}`` on stdin (never argv: the URLs
carry credentials and argv is visible to every user in ``ps``).  Prints one line per URL, naming it
by its scheme only, and apprise's warnings with every part of every URL scrubbed.  Exit 0 when every
URL took the message, 1 when one did not, 2 when a URL is not one apprise knows.
"""

from __future__ import annotations

import io
import json
import logging
import re
import sys
from collections.abc import Sequence
from urllib.parse import unquote

from rocmbuild.records.redact import REDACTED, redact_urls

_PARTS = re.compile(r"[/:@?&=#,+]+")


def scrub(text: str, urls: Sequence[str]) -> str:
    """``text`` without any piece of ``urls`` (hosts, paths, users, tokens) of 4 characters or more."""
    pieces: set[str] = set()
    for url in urls:
        _, _, rest = url.partition("://")
        for piece in _PARTS.split(rest):
            if len(piece) >= 4:
                pieces.update((piece, unquote(piece)))
    for piece in sorted(pieces, key=len, reverse=True):
        text = text.replace(piece, REDACTED)
    return redact_urls(text)


def main() -> int:
    import apprise

    request = json.loads(sys.stdin.read())
    urls = [str(u) for u in request.get("urls") or []]
    log = io.StringIO()
    handler = logging.StreamHandler(log)
    handler.setLevel(logging.WARNING)
    logging.getLogger("apprise").addHandler(handler)
    status = 0
    kind = apprise.NotifyType.FAILURE if request.get("failed") else apprise.NotifyType.SUCCESS
    for url in urls:
        label = redact_urls(url)
        sender = apprise.Apprise()
        if not sender.add(url):
            print(f"{label}: not a notification URL apprise knows (see its list of services)")
            status = max(status, 2)
            continue
        ok = sender.notify(title=str(request.get("title") or ""), body=str(request.get("body") or ""),
                           notify_type=kind)
        print(f"{label}: {'sent' if ok else 'not delivered'}")
        if not ok:
            status = max(status, 1)
    warnings = log.getvalue().strip()
    if warnings:
        print(scrub(warnings, urls)[-2000:])
    return status


if __name__ == "__main__":
    sys.exit(main())
