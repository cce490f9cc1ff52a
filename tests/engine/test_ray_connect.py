"""Connecting to Ray, the parts that need no cluster: where the token is found (in Ray's order), and
native log lines written to file descriptor 2 kept out of the output unless asked for."""

from __future__ import annotations

import os

import pytest

from jitlab.engine.ray_auth import find_token
from jitlab.engine.ray_connect import native_stderr_hidden, split_address
from jitlab.errors import UserError


def test_token_sources_in_rays_order(tmp_path):
    home = tmp_path / "home"
    (home / ".ray").mkdir(parents=True)
    assert find_token({"HOME": str(home)}) is None
    (home / ".ray" / "auth_token").write_text("from-home\n")  # one line, whitespace trimmed as Ray does
    named = tmp_path / "copied_token"
    named.write_text("  from-path  \nsecond line\n")
    token = find_token({"HOME": str(home)})
    assert (token.value, token.source) == ("from-home", str(home / ".ray" / "auth_token"))
    token = find_token({"HOME": str(home), "RAY_AUTH_TOKEN_PATH": str(named)})
    assert (token.value, token.source) == ("from-path", f"RAY_AUTH_TOKEN_PATH ({named})")
    env = {"HOME": str(home), "RAY_AUTH_TOKEN_PATH": str(named), "RAY_AUTH_TOKEN": "from-variable"}
    assert (find_token(env).value, find_token(env).source) == ("from-variable", "RAY_AUTH_TOKEN")
    env["RAY_AUTH_TOKEN"] = "  "  # empty: the next source counts
    assert find_token(env).value == "from-path"


def test_an_unreadable_token_path_is_named(tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(UserError, match=f"RAY_AUTH_TOKEN_PATH={missing} names a file that cannot be read"):
        find_token({"HOME": str(tmp_path), "RAY_AUTH_TOKEN_PATH": str(missing)})


@pytest.mark.parametrize("hide", [True, False])
def test_native_lines_on_descriptor_2_are_hidden_unless_asked(capfd, hide):
    line = b"[2026-11-24 18:34:30,819 W 1 1] gcs_client.cc:210: Failed to get cluster ID\n"
    with native_stderr_hidden(hide) as captured:
        os.write(2, line)  # as Ray's C++ core writes: around sys.stderr
    os.write(2, b"after\n")
    err = capfd.readouterr().err
    assert ("gcs_client.cc" in err) is not hide
    assert err.endswith("after\n")  # descriptor 2 is back where it was
    assert captured.text == (line.decode() if hide else "")


@pytest.mark.parametrize("address", ["127.0.0.1", "ray://host", "host:port", "", "http://"])
def test_not_an_address(address):
    with pytest.raises(UserError, match="is not a Ray address"):
        split_address(address)


def test_addresses():
    assert split_address("10.0.0.7:6379") == ("10.0.0.7", 6379)
    assert split_address("ray://head:10001") == ("head", 10001)
