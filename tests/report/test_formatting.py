from jitlab.formatting import nbytes, seconds, size_label


def test_seconds_pick_the_unit_after_rounding():
    assert seconds(0.0009996) == "1 ms"
    assert seconds(1.5e-5) == "15 µs"
    assert seconds(12.345) == "12.3 s"
    assert seconds(None) == "-"


def test_sizes_and_bytes():
    assert size_label(10**6) == "1e6"
    assert size_label(2 * 10**5) == "2e5"
    assert size_label(1234) == "1234"
    assert nbytes(3 * 2**20) == "3.0 MiB"
