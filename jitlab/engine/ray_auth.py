"""Token authentication of a Ray cluster, checked before connecting, so that a missing or wrong token
is one line naming it rather than Ray's retry loop ending in "cannot connect".

A Ray cluster started with token authentication (`RAY_AUTH_MODE=token`, and the default of newer Ray
versions whenever a token file exists on the head) answers only clients that send its token. The
token is made on the head (`ray get-auth-token --generate` writes `~/.ray/auth_token`) and must reach
every node and the machine that runs jitlab, in one of the places Ray reads, in this order: the
`RAY_AUTH_TOKEN` variable (the token itself), a file named by `RAY_AUTH_TOKEN_PATH`, or
`~/.ray/auth_token`. A process that connects to an address it was given sends the token only when
`RAY_AUTH_MODE=token` is set in its environment: Ray never turns authentication on by itself there.

The check asks the head's GCS for its cluster id (or Ray Client's server for a ping), once without a
token (is authentication on?) and, when it is, once with the token this process would send (is it
the head's?). Both are single gRPC calls that answer at once, where `ray.init` retries for about 20
seconds (Ray Client: 30). When the probe cannot tell
(another protocol, TLS, a Ray without these messages), it says nothing and `ray.init` decides.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from jitlab.errors import UserError

MODE_VAR = "RAY_AUTH_MODE"
TOKEN_VAR = "RAY_AUTH_TOKEN"
TOKEN_PATH_VAR = "RAY_AUTH_TOKEN_PATH"
DEFAULT_TOKEN_FILE = Path(".ray") / "auth_token"
PROBE_TIMEOUT_S = 5.0
#: how the head's token reaches this machine, for the messages
PROVIDE_TOKEN = (
    "copy the head's ~/.ray/auth_token to ~/.ray/auth_token here (or to any file named by "
    "RAY_AUTH_TOKEN_PATH), or set RAY_AUTH_TOKEN to the token `ray get-auth-token` prints on the head"
)


@dataclass(frozen=True)
class Token:
    value: str
    #: where it was found, for messages: "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH (/path)" or the file
    source: str


def find_token(env: Mapping[str, str] | None = None) -> Token | None:
    """The token Ray would send from this process, found where Ray looks for it and in its order;
    None when there is none. A `RAY_AUTH_TOKEN_PATH` that cannot be read is a `UserError` (Ray itself
    aborts the process on it)."""
    env = os.environ if env is None else env
    if env.get(TOKEN_VAR, "").strip():
        return Token(env[TOKEN_VAR].strip(), TOKEN_VAR)
    if env.get(TOKEN_PATH_VAR):
        path = env[TOKEN_PATH_VAR]
        value = _first_line(Path(path))
        if not value:
            raise UserError(
                f"{TOKEN_PATH_VAR}={path} names a file that cannot be read or is empty: point it at a copy "
                "of the head's ~/.ray/auth_token, or unset it"
            )
        return Token(value, f"{TOKEN_PATH_VAR} ({path})")
    home = env.get("HOME") or str(Path.home())
    default = Path(home) / DEFAULT_TOKEN_FILE
    value = _first_line(default)
    return Token(value, str(default)) if value else None


def _first_line(path: Path) -> str:
    try:
        with path.open(encoding="utf-8", errors="replace") as file:
            return file.readline().strip()
    except OSError:
        return ""


def token_mode_on() -> bool:
    """Whether Ray in this process sends a token (RAY_AUTH_MODE=token, or its default being token)."""
    try:
        from ray._raylet import AuthenticationMode, get_authentication_mode

        return get_authentication_mode() == AuthenticationMode.TOKEN
    except (ImportError, AttributeError):  # a Ray without token authentication
        return os.environ.get(MODE_VAR, "").strip().lower() == "token"


def probe(host: str, port: int, token: str | None, client: bool = False) -> str:
    """Ask the head at host:port a question that needs no other state: the GCS for its cluster id,
    or (`client`) Ray Client's server for a ping. "ok", "refused" (the token is missing or not the
    cluster's) or "unknown" (no answer this check can read)."""
    try:
        import grpc
        from ray.core.generated import (
            gcs_service_pb2,
            gcs_service_pb2_grpc,
            ray_client_pb2,
            ray_client_pb2_grpc,
        )
    except ImportError:
        return "unknown"
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    metadata = [("authorization", f"Bearer {token}")] if token else []
    with grpc.insecure_channel(target) as channel:
        if client:
            call = ray_client_pb2_grpc.RayletDriverStub(channel).ClusterInfo
            request = ray_client_pb2.ClusterInfoRequest(type=ray_client_pb2.ClusterInfoType.PING)
        else:
            call = gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel).GetClusterId
            request = gcs_service_pb2.GetClusterIdRequest()
        try:
            call(request, timeout=PROBE_TIMEOUT_S, metadata=metadata)
        except grpc.RpcError as exc:
            return "refused" if exc.code() == grpc.StatusCode.UNAUTHENTICATED else "unknown"
    return "ok"


def check_token_auth(address: str, host: str, port: int, client: bool = False) -> None:
    """Raise a `UserError` naming what is missing when the cluster at `address` (its GCS, or with
    `client` its Ray Client server) asks for a token that this process would not send, or refuses
    the one it would."""
    if probe(host, port, None, client) != "refused":
        return  # no authentication, or nothing this check can read: ray.init decides
    token = find_token()
    refused = token is not None and probe(host, port, token.value, client) == "refused"
    if token is not None and not refused and token_mode_on():
        return
    raise auth_error(address, refused)


def auth_error(address: str, refused: bool) -> UserError:
    """The one-line error for a cluster that wants a token: the variable or file that is missing
    here, or the token it refused, and how to give it the head's."""
    head = f"the Ray cluster at {address} uses token authentication"
    token, mode = find_token(), token_mode_on()
    set_mode = f"export {MODE_VAR}=token"
    if token is not None and (refused or mode):
        also = "" if mode else f", and {MODE_VAR}=token is not set here"
        todo = PROVIDE_TOKEN if mode else f"{PROVIDE_TOKEN}; and {set_mode}"
        return UserError(
            f"{head} and refused the token from {token.source} (not the head's token){also}: {todo}"
        )
    if token is not None:
        return UserError(
            f"{head}, but {MODE_VAR}=token is not set here (the token in {token.source} is sent only "
            f"then): {set_mode}"
        )
    missing = f"no token was found ({TOKEN_VAR}, {TOKEN_PATH_VAR} or ~/.ray/auth_token)"
    if not mode:
        return UserError(
            f"{head}, but here {MODE_VAR}=token is not set and {missing}: {set_mode} and {PROVIDE_TOKEN}"
        )
    return UserError(f"{head}, but here {missing}: {PROVIDE_TOKEN}")
