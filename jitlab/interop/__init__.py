"""Ways in and out of other benchmark tools' formats, as plain data: each module converts between a
stored jitlab run (records) and another tool's documents, without touching the store itself (the
command line writes what they return)."""
