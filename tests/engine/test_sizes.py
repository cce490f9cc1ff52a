import pytest

from jitlab.engine.plan import parse_size, parse_sizes
from jitlab.errors import UserError


@pytest.mark.parametrize(
    "text, value", [("1e6", 10**6), ("1000000", 10**6), ("10**3", 1000), ("2e3", 2000), ("1_000", 1000)]
)
def test_sizes_in_every_accepted_spelling(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["0", "-5", "1.5", "abc", "1e-3", ""])
def test_sizes_that_are_not_positive_integers_are_rejected(text):
    with pytest.raises(UserError, match="not a positive integer"):
        parse_size(text)


def test_size_list():
    assert parse_sizes("1e3, 1e4") == [1000, 10000]
    with pytest.raises(UserError):
        parse_sizes(",")
