"""Secrets out of records and consoles: one place that knows what a secret looks like.

Two shapes (DESIGN.md, run records): credentials in a URL (``scheme://user:pw@host``,
``redis://:pw@host``, ``https://TOKEN@host``) and the value of a variable whose
name looks secret (``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*_KEY``).  Pure
functions; records.py applies them to every event, the summary and repro.sh,
the app to what it prints.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

REDACTED = "<redacted>"
# scheme://userinfo@ -- userinfo is everything up to the @ that has no '/', whitespace or another '@'.
_URL_CREDENTIALS = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/@\s'\"]+)@")
# Query parameters that carry credentials (pre-signed URLs, tokens in a download link).
_SECRET_PARAM = re.compile(
    r"(?P<key>[?&](?:[^=&#\s]*(?:token|secret|password|passwd|signature|credential|key|auth|sig)[^=&#\s]*))=[^&#\s'\"]*",
    re.IGNORECASE)
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|_KEY$|^KEY$|_KEY_", re.IGNORECASE)
# A notification URL keeps its secrets anywhere after the scheme (slack://TokenA/TokenB/TokenC,
# https://hooks.slack.com/services/T/B/X, json://host/hook/SECRET): in a value that names notification
# targets (the ``notify`` option), each URL is kept as its scheme only.
_ANY_URL = re.compile(r"\b(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://[^\s'\",]+")
_URL_VALUED_KEYS = frozenset({"notify"})


def secret_name(name: str) -> bool:
    """Whether a variable (or JSON key) of this name holds a secret by its name alone."""
    return bool(_SECRET_NAME.search(name))


def redact_text(text: str) -> str:
    """``text`` with the credentials of every URL in it replaced (userinfo, and secret query parameters)."""
    if "://" not in text:
        return text
    text = _URL_CREDENTIALS.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", text)
    return _SECRET_PARAM.sub(lambda m: f"{m.group('key')}={REDACTED}", text) if "=" in text else text


def redact_urls(text: str) -> str:
    """``text`` with every URL in it reduced to ``scheme://<redacted>`` (notification targets)."""
    return _ANY_URL.sub(lambda m: f"{m.group('scheme')}://{REDACTED}", text)


def redact_secret_values(text: str, environ: Mapping[str, str], shortest: int = 4) -> str:
    """``text`` with the value of every secret-named variable of ``environ`` replaced (what a child printed)."""
    values = sorted({v for k, v in environ.items() if secret_name(k) and len(v) >= shortest}, key=len, reverse=True)
    for value in values:
        text = text.replace(value, REDACTED)
    return text


def redact_value(name: str, value: str) -> str:
    return REDACTED if secret_name(name) and value else redact_text(value)


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    return {name: redact_value(name, value) for name, value in env.items()}


def redact(data: Any) -> Any:
    """A JSON-like value with every secret in it replaced (dict keys name variables or fields)."""
    if isinstance(data, str):
        return redact_text(data)
    if isinstance(data, Mapping):
        return {key: (REDACTED if isinstance(key, str) and secret_name(key) and isinstance(value, str) and value
                      else redact_urls(value) if key in _URL_VALUED_KEYS and isinstance(value, str)
                      else redact(value)) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [redact(item) for item in data]
    return data
