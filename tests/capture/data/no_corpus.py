"""A Python file without a CORPUS: `jitlab capture` must tell the user to define one."""

VALUE = 1
