"""A Python file that defines no workload."""

VALUE = 1
