"""Rendering the report model with Jinja2 (autoescape on: every string from user code or the store
is escaped) into one self-contained HTML file."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import jinja2

from jitlab.errors import UserError
from jitlab.report.html.model import report_model
from jitlab.store import Store
from jitlab.userfiles import writable_folder

TEMPLATE = "report.html.j2"


def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_report(store: Store, run_ids: Sequence[int]) -> str:
    return environment().get_template(TEMPLATE).render(**report_model(store, run_ids))


def write_report(store: Store, run_ids: Sequence[int], out_dir: str | os.PathLike) -> Path:
    """Write DIR/index.html; an output folder that cannot be made or written is a `UserError`."""
    folder = writable_folder(Path(out_dir), "output folder", "pass another -o DIR")
    html = render_report(store, run_ids)
    path = folder / "index.html"
    try:
        path.write_text(html, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror}; pass another -o DIR") from exc
    return path
