"""The names of the capture methods, importable without torch (the command line checks them early)."""

METHOD_NAMES = ("jitlab", "dynamo", "export", "fx", "script", "trace")
