import pytest
from django.http import QueryDict

from core.errors import InvalidInput
from core.paging import Page, parse_page_request


@pytest.mark.parametrize("query", ["page=0", "page=abc", "page=-1", "page_size=1000", "page_size=0", "page=1.5",
                                   "page=99999999999"])
def test_bad_page_parameters_are_invalid_input(query):
    with pytest.raises(InvalidInput):
        parse_page_request(QueryDict(query))


def test_operator_smuggling_is_not_a_value():
    # page[$gt]= arrives as a key named "page[$gt]"; page itself stays absent.
    assert parse_page_request(QueryDict("page[$gt]=")).page == 1
    with pytest.raises(InvalidInput):
        parse_page_request({"page": {"$gt": ""}})


def test_defaults_and_bounds():
    req = parse_page_request(QueryDict(""))
    assert (req.page, req.page_size, req.skip) == (1, 20, 0)
    req = parse_page_request(QueryDict("page=3&page_size=100"))
    assert (req.page, req.page_size, req.skip) == (3, 100, 200)


def test_page_arithmetic_and_range():
    page = Page(items=[], count=201, page=6, page_size=20)
    assert page.num_pages == 11 and page.has_next and page.has_previous
    assert page.page_range() == [1, None, 4, 5, 6, 7, 8, None, 11]
    assert Page(items=[], count=0, page=1, page_size=20).num_pages == 1
