"""One redaction layer: every URL, model spec and server-supplied string passes here before it
reaches a file, a log record, a progress bar, a table, a manifest or a report.

* `redact_url` removes the user info (user:password@) and every credential-like query parameter
  (key, api-key, api_key, token, access_token, sig, ...) and the fragment of a URL.
* `register_secret` remembers a secret's value (the API key, a URL's password, a credential query
  value) for this process; `redact` then replaces every registered value wherever it appears, and
  rewrites URLs inside any text with `redact_url`. Values are kept in a module-level set, never as
  an attribute of a model (so not in reprs, vars() or pickles).
* Registering a secret also installs a log-record factory that scrubs every record's message
  (every logger: the openai and httpx libraries log request URLs).
* `redact_text` is `redact` plus what an error line or a crash log (simsubjects.cli.crash) may hold
  that this process never registered: the values of secret environment variables (OPENAI_API_KEY,
  HF_TOKEN, ...), user:password@ without a scheme, credential query parameters outside a URL and
  bearer tokens of any length.

Hand-written: no maintained library scrubs arbitrary text of known values and URL credentials.
"""

from __future__ import annotations

import base64
import logging
import os
import re
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

MASK = "[REDACTED]"
# Query parameters that carry credentials (compared lower-case, '-' and '_' alike); any name that
# contains one of the fragments below counts as well.
CREDENTIAL_PARAMS = {"key", "apikey", "api_key", "token", "access_token", "refresh_token", "id_token", "sig",
                     "signature", "secret", "client_secret", "password", "passwd", "pwd", "pass", "auth",
                     "authorization", "credential", "credentials", "session", "sessionid", "code", "jwt",
                     "bearer", "x_api_key", "subscription_key"}
_FRAGMENTS = ("key", "token", "secret", "pass", "auth", "sig", "cred", "session")
# a URL inside text ends at whitespace, a quote, a bracket or a comma (spec strings list URLs with commas)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>`,]+")
_BEARER = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=\-]{8,}")
_SK = re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}")
MIN_SECRET = 4  # shorter values would scrub ordinary words

_secrets: set[str] = set()


def is_credential_param(name: str) -> bool:
    n = name.lower().replace("-", "_")
    return n in CREDENTIAL_PARAMS or any(f in n for f in _FRAGMENTS)


def url_secrets(url: str) -> list[str]:
    """The secret values a URL carries: its password and its credential query values."""
    try:
        p = urlsplit(url)
        out = [p.password or ""]  # a user name alone is not secret (and may be a common word)
        if p.password:  # httpx sends user info as HTTP Basic auth: a server may echo that form
            out.append(base64.b64encode(f"{unquote(p.username or '')}:{unquote(p.password)}".encode()).decode())
    except ValueError:
        return []
    out += [v for k, v in parse_qsl(p.query, keep_blank_values=True) if is_credential_param(k)]
    return [s for s in out if len(s) >= MIN_SECRET]


def redact_url(url: str) -> str:
    """The URL without user info, credential query parameters or fragment."""
    try:
        p = urlsplit(url)
        host = p.hostname or ""
        port = p.port
    except ValueError:  # not parseable (a bad port, a broken IPv6 literal): drop user info, query, fragment
        scheme, sep, rest = url.partition("://")
        rest = re.split(r"[?#]", rest, maxsplit=1)[0]
        head, slash, path = rest.partition("/")
        return scheme + sep + head.rpartition("@")[2] + slash + path
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = host + (f":{port}" if port else "")
    query = [(k, v) for k, v in parse_qsl(p.query, keep_blank_values=True) if not is_credential_param(k)]
    return urlunsplit((p.scheme, netloc, p.path, urlencode(query), ""))


def register_secret(*values: str | None) -> None:
    """Remember secret values; from now on `redact` (and every log record) masks them."""
    for v in values:
        if v and len(v) >= MIN_SECRET:
            _secrets.add(v)
            # the value as it appears percent-encoded in a URL
            from urllib.parse import quote

            _secrets.add(quote(v, safe=""))
    if _secrets:
        _install_log_scrubber()


def register_url(url: str) -> None:
    register_secret(*url_secrets(url))


def redact(text: Any) -> str:
    """`text` as a string with registered secrets, URL credentials, bearer tokens and sk- keys masked."""
    s = text if isinstance(text, str) else str(text)
    s = _URL.sub(lambda m: redact_url(m.group(0)), s)
    for v in sorted(_secrets, key=len, reverse=True):
        if v in s:
            s = s.replace(v, MASK)
    s = _BEARER.sub(lambda m: f"{m.group(1)} {MASK}", s)
    return _SK.sub(lambda m: m.group(0)[:6] + MASK, s)


def mask_secrets(text: str) -> str:
    """Only the registered secret values masked: for a model's own text (a completion), whose URLs
    and wording are data and stay as they are."""
    for v in sorted(_secrets, key=len, reverse=True):
        if v in text:
            text = text.replace(v, MASK)
    return text


def redact_obj(obj: Any) -> Any:
    """Every string inside a JSON-like object (dicts, lists) redacted; keys too."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {redact(k) if isinstance(k, str) else k: redact_obj(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(redact_obj(v) for v in obj)
    return obj


def server_string(value: Any, limit: int = 200) -> str:
    """A string a server sent (a model id, a fingerprint): redacted, one line, bounded."""
    return redact(" ".join(str(value or "").split()))[:limit]


_installed = False


def _install_log_scrubber() -> None:
    """Wrap the log-record factory so that every record's message is redacted when it is made."""
    global _installed
    if _installed:
        return
    _installed = True
    old = logging.getLogRecordFactory()

    def factory(*args, **kwargs):
        record = old(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record is the logging module's to report
            return record
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        return record

    logging.setLogRecordFactory(factory)


# --- error lines and crash logs (simsubjects.cli.crash) ------------------------------------------------

# Environment variables whose values are secrets wherever they appear (OPENAI_API_KEY, HF_TOKEN, ...).
# Whole words of the name only: TOKENIZERS_PARALLELISM=false is not a secret.
SECRET_ENV = re.compile(r"(^|_)(API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTH)($|_)", re.I)
# scheme://user:password@ whatever follows (a URL cut short in a message, or with a comma in it)
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/@\s?#]+)@")
# user:password@host without a scheme (a URL typed without http://); not the spec form openai:MODEL@URL
_BARE_USERINFO = re.compile(r"(?<![\w.~%+-])(?!openai:|hf:)(?P<user>[\w.~%+-]+):(?P<pw>[^\s'\",/@]+)@")
# ?name=value / &name=value / ;name=value outside a parseable URL; masked for the names of CREDENTIAL_PARAMS
_PARAM = re.compile(r"(?P<name>[?&;](?P<key>[\w.-]+)=)(?P<value>[^&;#\s'\"]*)")
_ANY_BEARER = re.compile(r"(?P<name>Bearer\s+)(?P<value>[A-Za-z0-9._~+/=-]+)", re.I)


def _secret_like(value: str) -> bool:
    """A value worth hiding: not a flag, a number or a word that would blank out ordinary text."""
    v = value.strip()
    return len(v) >= 6 and v.lower() not in ("true", "false", "none", "null") and not v.isdigit()


def redact_text(text: Any, extra: tuple[str, ...] = ()) -> str:
    """`redact`, then URL user info, credential query values and bearer tokens anywhere in the text, the
    values of secret environment variables and the `extra` values: for error lines and crash logs."""
    s = redact(text)
    s = _USERINFO.sub(lambda m: m["scheme"] + MASK + "@", s)
    s = _BARE_USERINFO.sub(lambda m: m["user"] + ":" + MASK + "@", s)
    # exact names here (not the fragments URLs use): free text has words such as "design=" or "author="
    s = _PARAM.sub(lambda m: m["name"] + MASK if m["key"].lower().replace("-", "_") in CREDENTIAL_PARAMS
                   and m["value"] else m[0], s)
    s = _ANY_BEARER.sub(lambda m: m["name"] + MASK, s)
    secrets = [v for k, v in os.environ.items() if SECRET_ENV.search(k) and _secret_like(v)] + [v for v in extra if v]
    for v in sorted(set(secrets), key=len, reverse=True):  # longest first: one secret may contain another
        s = s.replace(v, MASK)
    return s
