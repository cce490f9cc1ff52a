"""`jitlab doctor`: why is this PyTorch code slow?

Runs the user's function and reports host-device synchronisations, data-dependent shapes, blocking
calls in loops, torch.compile graph breaks and recompilations (each with the user's file and line and
a suggestion), and the regime (overhead-, bandwidth- or compute-bound) from counted FLOPs and bytes
against the machine peaks, confirmed by a scaling check.
"""

from jitlab.doctor.context import UserCodeFailed
from jitlab.doctor.diagnosis import Diagnosis, check_names, diagnose
from jitlab.doctor.findings import Finding
from jitlab.doctor.registry import register_check

__all__ = ["Diagnosis", "Finding", "UserCodeFailed", "check_names", "diagnose", "register_check"]
