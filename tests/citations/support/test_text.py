"""How the check reads text (citations/support/text.py)."""

import pytest

from citations.support.text import normal_form


@pytest.mark.parametrize(
    "text, expected",
    [
        ("the 2018–19 academic year", "the 2018–2019 academic year"),
        ("seasons 1998-99 and 2001 – 02", "seasons 1998-1999 and 2001 – 2002"),
        ("on 2010-12-01", "on 2010-12-01"),  # a date
        ("from 2018-05", "from 2018-05"),  # a month, or no range of years
        ("ISBN 978-1-2018-19", "ISBN 978-1-2018-19"),
        ("call 1234-56", "call 1234-56"),
        ("the 1999–00 season", "the 1999–2000 season"),
        ("in 2010-12", "in 2010-12"),  # a month: 12 is not the year after 2010
        ("from 1987-89", "from 1987-89"),  # not the year after: left as written
        ("2018-19.5", "2018-19.5"),
        ("2018-19/05", "2018-19/05"),  # a slash: maybe a date
    ],
)
def test_a_shortened_second_year_is_written_out(text, expected):
    assert normal_form(text) == expected
