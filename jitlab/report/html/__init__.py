"""The static HTML report: one self-contained file (inline CSS, plots as inline SVG, no scripts, no
network), built from the store only."""

from jitlab.report.html.render import render_report, write_report

__all__ = ["render_report", "write_report"]
