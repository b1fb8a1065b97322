"""Under daphne, Twisted's Content-Type parse is memoized and answers exactly as before."""

import sys

import pytest

from homehub import twisted_fixes

http = pytest.importorskip("twisted.web.http")


@pytest.fixture
def fresh_twisted(monkeypatch):
    """Twisted's module with its own parse (as shipped); whatever was there is put back."""
    shipped = getattr(http._parseContentType, "__wrapped__", http._parseContentType)
    monkeypatch.setattr(http, "_parseContentType", shipped)
    return http


CONTENT_TYPES = [
    b"application/json",
    b"Application/JSON; charset=utf-8",
    b"multipart/form-data; boundary=----x",
    b"application/x-www-form-urlencoded",
    b"text/plain;charset=latin-1",
    b"",
    b"nonsense",
    b"a/b; c=d; e",
]


def test_the_parse_is_memoized_and_gives_the_same_answers(fresh_twisted):
    original = fresh_twisted._parseContentType
    expected = [original(value) for value in CONTENT_TYPES]
    assert twisted_fixes.apply() is True
    memoized = fresh_twisted._parseContentType
    assert memoized is not original and memoized.cache_info().currsize == 0
    assert [memoized(value) for value in CONTENT_TYPES * 2] == expected * 2
    assert memoized.cache_info().hits == len(CONTENT_TYPES)
    assert twisted_fixes.apply() is True and fresh_twisted._parseContentType is memoized  # once


def test_a_form_post_is_still_parsed_by_twisted(fresh_twisted):
    """Twisted's own use of the parse (form arguments of a POST) works with the cache."""
    from twisted.internet.testing import StringTransport

    twisted_fixes.apply()
    channel = fresh_twisted.HTTPChannel()
    seen = []

    class Seeing(fresh_twisted.Request):
        def process(self):
            seen.append(self.args)
            self.finish()

    channel.requestFactory = Seeing
    channel.makeConnection(StringTransport())
    body = b"a=1&b=2"
    channel.dataReceived(
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    assert seen == [{b"a": [b"1"], b"b": [b"2"]}]


def test_nothing_is_patched_without_twisted(monkeypatch):
    monkeypatch.delitem(sys.modules, "twisted.web.http")
    assert twisted_fixes.apply() is False
