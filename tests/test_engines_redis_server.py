"""engines/redis_server.py: Debian's redis-server for tests and CI, on a free loopback port."""
from __future__ import annotations

import pytest
import redis

from engines import redis_server


def test_a_started_server_answers_on_loopback_and_stops():
    if redis_server.redis_server() is None:
        pytest.skip(redis_server.REDIS_MISSING)
    with redis_server.redis_process() as url:
        assert url.startswith("redis://127.0.0.1:")
        client = redis.Redis.from_url(url, socket_connect_timeout=2)
        assert client.ping() and client.config_get("bind")["bind"] == "127.0.0.1"
        client.close()
    with pytest.raises(redis.ConnectionError):
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()


def test_without_redis_server_it_says_what_to_install(monkeypatch):
    monkeypatch.setattr(redis_server.shutil, "which", lambda name: None)
    assert redis_server.redis_server() is None
    with pytest.raises(RuntimeError, match="apt-get install redis-server"):
        with redis_server.redis_process():
            pass
