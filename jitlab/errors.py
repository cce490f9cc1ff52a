"""Errors that are the user's to fix.

A `UserError` is turned by the command line into one line on stderr and exit code 2, without a
traceback: it names what was wrong and what to do. Anything else is a bug in jitlab and keeps its
traceback.
"""

from __future__ import annotations


class UserError(Exception):
    """Bad input: an unknown name, a broken file, an unusable store. The message says what to do."""


class BackendUnavailable(UserError):
    """A backend's framework is not installed; the message carries the install hint."""
