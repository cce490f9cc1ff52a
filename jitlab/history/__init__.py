"""A cell's median over all stored runs of one machine, and the step changes in it.

`changepoint` finds steps in any series (PELT with a penalty scaled by the series' own noise),
`series` reads histories from the store, `plot` draws them.
"""

from jitlab.history.changepoint import pelt
from jitlab.history.series import History, HistoryPoint, HistorySeries, Step, load_history

__all__ = ["History", "HistoryPoint", "HistorySeries", "Step", "load_history", "pelt"]
