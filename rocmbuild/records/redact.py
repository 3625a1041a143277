"""Secrets out of records and consoles: one place that knows what a secret looks like.

Three shapes (docs/reference-records.md): credentials in a URL (``scheme://user:pw@host``,
``redis://:pw@host``, ``https://TOKEN@host``, ``?token=...``), the value of a variable whose
name looks secret (``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*_KEY``), and that same value
wherever else it turns up (a build that echoes ``$MY_API_TOKEN``).  Pure functions; the
recorder applies them to every event, the summary and repro.sh, the CLI to what it prints.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import overload

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


# A secret value shorter than this is not searched for in free text: "1" or "yes" in a variable named
# USE_TOKEN_CACHE would blank every 1 and yes in a log.
MIN_SECRET_VALUE = 6


def secret_values(env: Mapping[str, str]) -> tuple[str, ...]:
    """The values of the secret-named variables in ``env`` worth finding in free text, longest first."""
    found = {value for name, value in env.items() if secret_name(name) and len(value) >= MIN_SECRET_VALUE}
    return tuple(sorted(found, key=len, reverse=True))


def redact_text(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with the credentials of every URL in it replaced (userinfo, and secret query parameters),
    and every one of ``secrets`` (values of secret-named variables) wherever it stands."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    if "://" not in text:
        return text
    text = _URL_CREDENTIALS.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", text)
    return _SECRET_PARAM.sub(lambda m: f"{m.group('key')}={REDACTED}", text) if "=" in text else text


def redact_urls(text: str) -> str:
    """``text`` with every URL in it reduced to ``scheme://<redacted>`` (notification targets)."""
    return _ANY_URL.sub(lambda m: f"{m.group('scheme')}://{REDACTED}", text)


def redact_value(name: str, value: str) -> str:
    return REDACTED if secret_name(name) and value else redact_text(value)


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    return {name: redact_value(name, value) for name, value in env.items()}


@overload
def redact(data: str, secrets: tuple[str, ...] = ()) -> str: ...
@overload
def redact(data: Mapping[str, object], secrets: tuple[str, ...] = ()) -> dict[str, object]: ...
@overload
def redact(data: object, secrets: tuple[str, ...] = ()) -> object: ...
def redact(data: object, secrets: tuple[str, ...] = ()) -> object:
    """A JSON-like value with every secret in it replaced (dict keys name variables or fields;
    ``secrets``: values to blank wherever they stand, see :func:`secret_values`)."""
    if isinstance(data, str):
        return redact_text(data, secrets)
    if isinstance(data, Mapping):
        return {key: (REDACTED if isinstance(key, str) and secret_name(key) and isinstance(value, str) and value
                      else redact_urls(value) if key in _URL_VALUED_KEYS and isinstance(value, str)
                      else redact(value, secrets)) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [redact(item, secrets) for item in data]
    return data
