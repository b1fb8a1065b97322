"""Redis's pub/sub ignores database numbers: the number a hub's REDIS_URL names goes into its
channel layer's channel names, so that hubs sharing one Redis by number stay apart."""

import pytest

from homehub.settings import redis_database


@pytest.mark.parametrize(
    ("url", "number"),
    [
        ("redis://127.0.0.1:6379/3", "3"),
        ("redis://127.0.0.1:6379", "0"),
        ("rediss://:secret@redis.example:6380/12", "12"),
        ("redis://127.0.0.1:6379/4?db=5", "5"),
        ("unix:///run/redis/redis.sock?db=2", "2"),
        ("unix:///run/redis/redis.sock", "0"),
    ],
)
def test_the_database_number_of_a_redis_url(url, number):
    assert redis_database(url) == number
