"""The one rule for secrets: what counts as a password and how it is masked before anything leaves
the process (stdout, `--json`, exports, HTML reports, what is stored, logs, tracebacks).

A store URL's password once reached every `--json` output through the command's echoed options,
and JSON outputs are what CI keeps as artifacts and prints to logs. So every place where options,
metadata, messages or URLs become output passes them through `mask_secrets`, which hides:

- the password of a URL (`scheme://user:PASSWORD@host`) and `password=` style parameters of a URL's
  query or a libpq connection string (`password`, `passwd`, `pwd`, `sslpassword`);
- every value this process knows to be secret: the passwords of the store URLs it parsed
  (`remember_url`) and the values of environment variables whose names say they hold credentials
  (`PGPASSWORD`, `*_PASSWORD`, `*_SECRET`, `*_TOKEN`, `*_API_KEY`, ...), wherever they appear;
- under a key that names a credential (`{"password": ...}`), the whole value.

Masking is idempotent and leaves text without secrets unchanged. A value shorter than
`MIN_SECRET_LENGTH` characters is not searched for as free text (it would mask ordinary words and
numbers); URL and `password=` forms are masked whatever their length.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

MASK = "***"
#: a known secret is searched for in free text only from this length on
MIN_SECRET_LENGTH = 4
#: words of environment variable names (split at "_") that say the value is a credential
SECRET_ENV_WORDS = frozenset({"PASSWORD", "PASSWD", "SECRET", "TOKEN", "CREDENTIAL", "CREDENTIALS"})
#: endings of environment variable names that say the value is a credential
SECRET_ENV_ENDINGS = ("API_KEY", "APIKEY", "PRIVATE_KEY", "ACCESS_KEY")
#: values of such variables that are switches, not secrets (never masked as free text)
NOT_SECRETS = frozenset({"true", "false", "yes", "no", "on", "off", "none", "null"})
#: environment variables holding URLs that may carry a password
URL_ENV_VARS = ("JITLAB_STORE", "DATABASE_URL")
#: keys of mappings (options, metadata) whose string values are credentials
SECRET_KEY = re.compile(r"(?i)^(?:.*[_\-])?(?:password|passwd|secret|token|api_?key|credentials?)$")

# scheme://user:PASSWORD@ (the password may hold anything but '@', '/' and whitespace)
_URL_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^:/@\s]*:)(?P<password>[^@/\s]+)(?=@)")
# password=VALUE in a URL query or a libpq "key=value" connection string
_PASSWORD_PARAMETER = re.compile(
    r"(?i)(?P<head>\b(?:password|passwd|pwd|sslpassword)\s*=\s*)(?P<value>'[^']*'|[^&\s'\"]+)"
)

_remembered: set[str] = set()


def remember_url(url: str) -> None:
    """Note the password of `url` (a store URL this process uses) as a secret to mask anywhere."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return
    if password:
        _remembered.update({password, unquote(password)})
    for match in _PASSWORD_PARAMETER.finditer(parts.query or ""):
        value = match.group("value").strip("'")
        _remembered.update({value, unquote(value)})


def is_secret_variable(name: str) -> bool:
    """Whether an environment variable's name says it holds a credential (`PGPASSWORD`,
    `GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`; not `TOKENIZERS_PARALLELISM`)."""
    upper = name.upper()
    words = set(upper.split("_"))
    return bool(words & SECRET_ENV_WORDS) or upper.endswith(SECRET_ENV_ENDINGS) or upper == "PGPASSWORD"


def environment_secrets(environ: Mapping[str, str] | None = None) -> set[str]:
    """Values of the environment's credential variables, and the passwords of its URL variables."""
    environ = os.environ if environ is None else environ
    found = set()
    for name, value in environ.items():
        if value and value.lower() not in NOT_SECRETS and is_secret_variable(name):
            found.add(value)
    for name in URL_ENV_VARS:
        value = environ.get(name) or ""
        try:
            password = urlsplit(value).password if "://" in value else None
        except ValueError:
            password = None
        if password:
            found.update({password, unquote(password)})
    return found


def known_secrets() -> list[str]:
    """Every secret searched for as free text, longest first (so no secret is half masked)."""
    secrets = (_remembered | environment_secrets()) - {MASK}
    return sorted((s for s in secrets if len(s) >= MIN_SECRET_LENGTH), key=len, reverse=True)


def mask_text(text: str, secrets: Iterable[str] | None = None) -> str:
    """`text` with URL passwords, `password=` values and known secrets replaced by ***."""
    if not text:
        return text
    # known secrets first: a password holding '@' or '/' is only partly inside the URL patterns
    for secret in known_secrets() if secrets is None else secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    text = _URL_USERINFO.sub(lambda m: m.group("head") + MASK, text)
    return _PASSWORD_PARAMETER.sub(lambda m: m.group("head") + MASK, text)


def mask_secrets(value: Any) -> Any:
    """`value` (a string, or mappings and sequences of them, as JSON holds) with every secret masked;
    numbers and other values unchanged. Mappings and lists are copied, never modified."""
    return _mask(value, known_secrets())


def _mask(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return mask_text(value, secrets)
    if isinstance(value, Mapping):
        return {
            key: (MASK if isinstance(item, str) and item and _secret_key(key) else _mask(item, secrets))
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        masked = [_mask(item, secrets) for item in value]
        return tuple(masked) if isinstance(value, tuple) else masked
    return value


def _secret_key(key: Any) -> bool:
    return isinstance(key, str) and bool(SECRET_KEY.match(key))
