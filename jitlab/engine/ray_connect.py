"""Connecting this process to a Ray cluster, with errors that name the cause.

Before Ray is asked to connect, the address is checked: something must listen there (Ray itself
would wait for minutes), and a cluster with token authentication must get a token it accepts
(`ray_auth`). What fails after that is read for the same causes. Each failure is one `UserError`
line: an unreachable address, a missing `RAY_AUTH_MODE` or token, a refused token, or Ray's own
message.

Ray's C++ core writes its log lines (`gcs_client.cc:210: Failed to get cluster ID ...`) straight to
file descriptor 2 while it connects, around Python's `sys.stderr`. They stay out of jitlab's output:
descriptor 2 points at a temporary file while `ray.init` runs, and what Ray wrote there is only read
to tell an authentication failure from others. With `--debug` (JITLAB_DEBUG=1) nothing is hidden.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from jitlab.engine.ray_auth import (
    MODE_VAR,
    PROVIDE_TOKEN,
    TOKEN_PATH_VAR,
    TOKEN_VAR,
    auth_error,
    check_token_auth,
    find_token,
    token_mode_on,
)
from jitlab.errors import UserError

CONNECT_CHECK_S = 5.0
ADDRESS_FORMS = (
    "auto, local, ray://HOST:PORT (Ray Client) or HOST:PORT (the head's GCS port, 6379 by default)"
)
#: what Ray writes or raises when a cluster refused this process's token (or got none)
AUTH_SIGNS = ("InvalidAuthToken", "AuthenticationError", "Unauthenticated")
#: the most of Ray's captured output read back, from its end
CAPTURED_TAIL = 64 * 1024


def split_address(address: str) -> tuple[str, int]:
    """(host, port) of HOST:PORT or ray://HOST:PORT; anything else is a `UserError`."""
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:  # a port that is not a number
        host, port = None, None
    if not host or not port:
        raise UserError(f"--cluster {address!r} is not a Ray address: give {ADDRESS_FORMS}")
    return host, port


def check_reachable(address: str) -> tuple[str, int]:
    """Fail fast, in one line, on an address nothing listens on (Ray itself may wait for minutes)."""
    host, port = split_address(address)
    try:
        socket.create_connection((host, port), timeout=CONNECT_CHECK_S).close()
    except OSError as exc:
        raise UserError(
            f"cannot reach the Ray cluster at {address} ({exc.strerror or exc}): start it there with "
            "`ray start --head`, or check the address and port"
        ) from None
    return host, port


class Captured:
    """What was written to file descriptor 2 inside `native_stderr_hidden` (empty when not hidden)."""

    def __init__(self) -> None:
        self.text = ""


@contextmanager
def native_stderr_hidden(hide: bool = True) -> Iterator[Captured]:
    """Point file descriptor 2 at a temporary file for the block, so that native code's log lines
    (and anything else written to stderr meanwhile) stay out of the terminal; the text is kept on the
    yielded object. Processes started inside the block inherit the file, which is never shown."""
    captured = Captured()
    if not hide:
        yield captured
        return
    sys.stderr.flush()
    with tempfile.TemporaryFile() as sink:
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            yield captured
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            size = sink.seek(0, os.SEEK_END)
            sink.seek(max(0, size - CAPTURED_TAIL))
            captured.text = sink.read().decode("utf-8", errors="replace")


def debugging() -> bool:
    """`--debug` was given (the command line sets JITLAB_DEBUG=1 for it)."""
    return os.environ.get("JITLAB_DEBUG") == "1"


def init_ray(address: str) -> None:
    """Connect this process to the Ray cluster at `address` (auto, local, ray://HOST:PORT or
    HOST:PORT), or raise a `UserError` naming why it cannot."""
    try:
        import ray
    except ImportError:
        raise UserError("--cluster needs Ray: pip install 'jitlab[cluster]'") from None
    options: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
    if address == "local":
        options.update(include_dashboard=False)
        target = None  # a new cluster of this machine: Ray makes its token itself
    else:
        target = address
        if address != "auto":
            host, port = check_reachable(address)
            check_token_auth(address, host, port, client=address.startswith("ray://"))
        if token_mode_on() and find_token() is None:
            raise UserError(
                f"{MODE_VAR}=token is set here but no token was found ({TOKEN_VAR}, {TOKEN_PATH_VAR} "
                f"or ~/.ray/auth_token): {PROVIDE_TOKEN}"
            )
    with native_stderr_hidden(not debugging()) as captured:
        try:
            ray.init(address=target, **options)
        except Exception as exc:  # Ray raises ConnectionError, RuntimeError or its own kinds here
            error = exc
        else:
            return
    cause = f"{type(error).__name__}: {error} {error.__cause__ or ''}"
    if any(sign in cause or sign in captured.text for sign in AUTH_SIGNS):
        raise auth_error(address, refused=find_token() is not None and token_mode_on()) from None
    message = " ".join(str(error).split())[:200] or type(error).__name__
    raise UserError(
        f"cannot connect to the Ray cluster at {address} ({message}): start it with `ray start --head` "
        f"and give its address ({ADDRESS_FORMS})"
    ) from None
