"""Secrets never leave: a store password given through `--store` or JITLAB_STORE, and the value of a
credential variable (PGPASSWORD), appear in no output of any command that reads or writes the
store (stdout, --json, exports, HTML reports, stored options, metadata and logs, --debug
tracebacks), against a real PostgreSQL server that checks the password. The rule itself
(`jitlab.secrets`) is tested first."""

from __future__ import annotations

import json
import subprocess
import uuid

import pytest
from jitlab_testing import DATA

from jitlab.secrets import environment_secrets, is_secret_variable, mask_secrets, mask_text, remember_url

WORKLOAD = str(DATA / "store_workload.py")
FAST = ["--processes", "1", "--budget", "0.05", "--threads", "1", "--sizes", "1,2"]
CREDENTIAL = "AnOtHeRsEcReT42"


def test_the_rule_masks_url_passwords_parameters_and_credential_variables(monkeypatch):
    assert mask_text("postgresql://me:hunter2@db:5432/x") == "postgresql://me:***@db:5432/x"
    assert (
        mask_text("see mysql://a:b%40c@h/d and redis://:tok@h") == "see mysql://a:***@h/d and redis://:***@h"
    )
    assert (
        mask_text("postgresql://db/x?sslmode=require&password=p4ss")
        == "postgresql://db/x?sslmode=require&password=***"
    )
    assert mask_text("host=db password='p w' user=me") == "host=db password=*** user=me"
    assert mask_text("postgresql://me@db/x and 12 cells") == "postgresql://me@db/x and 12 cells"
    remember_url("postgresql://me:p@ss-word@db/x")  # an '@' the URL patterns alone would cut short
    assert mask_text("postgresql://me:p@ss-word@db/x, p@ss-word") == "postgresql://me:***@db/x, ***"
    monkeypatch.setenv("CI_JOB_TOKEN", "tok-123456")
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    monkeypatch.setenv("JITLAB_STORE", "postgresql://me:s3cr3t-pw@db/x")
    assert is_secret_variable("PGPASSWORD") and is_secret_variable("AWS_SECRET_ACCESS_KEY")
    assert not is_secret_variable("TOKENIZERS_PARALLELISM") and not is_secret_variable("PWD")
    assert {"tok-123456", "s3cr3t-pw"} <= environment_secrets() and "false" not in environment_secrets()
    data = {"log": "token tok-123456, pw s3cr3t-pw", "api_token": "abc", "n": [1, 2.5, None], "flag": False}
    assert mask_secrets(data) == {
        "log": "token ***, pw ***",
        "api_token": "***",
        "n": [1, 2.5, None],
        "flag": False,
    }
    assert data["log"].startswith("token tok")  # copied, not modified
    assert mask_secrets(mask_secrets(data)) == mask_secrets(data)  # idempotent


@pytest.fixture
def protected_store(postgres) -> tuple[str, str]:
    """A database whose user must give a real password: (its URL with the password, the password)."""
    password = "SeCrEt" + uuid.uuid4().hex[:10]
    return postgres.password_user("pw_" + uuid.uuid4().hex[:8], password), password


def dump(postgres, url: str) -> str:
    """Every byte the database holds for the store, as SQL."""
    database = url.rsplit("/", 1)[1]
    return subprocess.run(
        [
            str(postgres.bindir / "pg_dump"),
            "-h",
            "127.0.0.1",
            "-p",
            str(postgres.port),
            "-U",
            postgres.user,
            database,
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def test_a_store_password_appears_in_no_output(postgres, protected_store, jitlab_cli, tmp_path):
    url, password = protected_store
    masked_url = url.replace(password, "***")
    env = {"PGPASSWORD": CREDENTIAL}
    outputs: dict[str, str] = {}

    def jitlab(name: str, *args: str, code: int = 0, **extra_env: str):
        result = jitlab_cli(*args, cwd=tmp_path, env={**env, **extra_env})
        outputs[name] = result.stdout + result.stderr
        assert result.returncode == code, (name, result.stdout[-2000:], result.stderr[-2000:])
        return result

    # a run through --store, one through JITLAB_STORE; their numpy cells print both secrets and fail
    first = jitlab("run --store", "run", WORKLOAD, *FAST, "--store", url, "--json")
    jitlab("run JITLAB_STORE", "run", WORKLOAD, *FAST, "--json", "--debug", JITLAB_STORE=url)
    jitlab("run text", "run", WORKLOAD, *FAST, "--backends", "python", "--store", url, "--no-plot")
    document = json.loads(first.stdout)
    assert document["options"]["store_path"] == masked_url  # the option is shown, masked
    failed = [c for c in document["cells"] if c["status"] == "failed"]
    assert failed and all("cannot log in with" in c["reason"] for c in failed), failed
    for args in (["--store", url], []):
        store_env = {} if args else {"JITLAB_STORE": url}
        tag = "--store" if args else "JITLAB_STORE"
        jitlab(f"runs {tag}", "runs", *args, **store_env)
        jitlab(f"runs --json {tag}", "runs", "--json", *args, **store_env)
        jitlab(f"show {tag}", "show", "1", "--details", *args, **store_env)
        jitlab(f"show --json {tag}", "show", "2", "--json", *args, **store_env)
        jitlab(f"compare {tag}", "compare", "1", "2", *args, **store_env)
        jitlab(f"compare --json {tag}", "compare", "1", "2", "--json", *args, **store_env)
        jitlab(f"history {tag}", "history", "steady", "--backend", "python", *args, **store_env)
        jitlab(f"history --json {tag}", "history", "steady", "--json", *args, **store_env)
        jitlab(f"show --debug {tag}", "show", "99", "--debug", *args, code=2, **store_env)
    for format in ("json", "csv", "pyperf"):
        jitlab(f"export {format}", "export", "1", "--format", format, "--store", url)
        jitlab(
            f"export {format} -o", "export", "2", "--format", format, "-o", f"run2.{format}", "--store", url
        )
    jitlab("report", "report", "1", "2", "-o", "report", "--store", url)
    local = str(tmp_path / "local.sqlite")
    jitlab("import from the server", "import", url, "--store", local, "--json")
    jitlab("import into the server", "import", "run2.json", local, "--store", url, "--json")
    jitlab("import text", "import", url, "--store", local, JITLAB_STORE=url)
    jitlab("missing database --debug", "runs", "--debug", "--store", url.replace("_db", "_nothing"), code=2)

    # the failed cells' worker output and traceback are kept, with the secrets masked
    exported = json.loads((tmp_path / "run2.json").read_text())
    log = next(c["log"] for c in exported["cells"] if c["status"] == "failed")
    assert "cannot log in with" in log and masked_url in log and "***" in log
    files = {str(p.relative_to(tmp_path)): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert {"run2.json", "run2.csv", "run2.pyperf", "report/index.html", "local.sqlite"} <= set(files)
    stored = dump(postgres, url)
    assert "cannot log in with" in stored  # the dump holds the runs and their cells' logs
    for secret in (password, CREDENTIAL):
        leaks = [name for name, text in outputs.items() if secret in text]
        leaks += [name for name, data in files.items() if secret.encode() in data]
        leaks += ["the database"] if secret in stored else []
        assert not leaks, f"{secret} leaked into {leaks}"
