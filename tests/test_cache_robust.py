"""The result cache survives damage and shares well: a corrupt or truncated file is set aside
with a warning and rebuilt; two processes hammering one cache lose nothing."""

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from anvil_local.cache import Cache


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda p: p.write_bytes(b"this is not a database" * 100), id="garbage"),
        pytest.param(lambda p: p.write_bytes(p.read_bytes()[:1500]), id="truncated"),
        pytest.param(lambda p: p.write_bytes(b"\x00" * 8192), id="zeros"),
    ],
)
def test_a_damaged_cache_is_set_aside_and_rebuilt(tmp_path: Path, damage, caplog):
    path = tmp_path / "cache.sqlite3"
    cache = Cache(path)
    for i in range(200):
        cache.put_result(f"k{i}", {"score": i / 200, "pad": "x" * 200})
    cache.close()
    damage(path)
    fresh = Cache(path)
    with caplog.at_level(logging.WARNING, logger="anvil_local.cache"):
        assert fresh.get_result("k1") is None  # a miss, not an exception
    assert "could not be read" in caplog.text and "set it aside" in caplog.text
    assert list(tmp_path.glob("cache.sqlite3.corrupt-*"))
    fresh.put_result("k1", {"score": 1.0})
    assert fresh.get_result("k1") == {"score": 1.0}


HAMMER = """
import sys
from pathlib import Path
from anvil_local.cache import Cache
cache = Cache(Path(sys.argv[1]))
me = sys.argv[2]
for i in range(300):
    cache.put_result(f"shared{i % 20}", {"by": me, "i": i})
    cache.put_result(f"{me}-{i}", {"i": i})
    got = cache.get_result(f"shared{i % 20}")
    assert got is not None and "by" in got
print("ok")
"""


def test_two_processes_hammering_one_cache_lose_nothing(tmp_path: Path):
    path = tmp_path / "cache.sqlite3"
    script = tmp_path / "hammer.py"
    script.write_text(HAMMER)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(path), name],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out.strip() == "ok"
    cache = Cache(path)
    for name in ("a", "b"):
        for i in range(300):
            assert cache.get_result(f"{name}-{i}") == {"i": i}
    shared = [cache.get_result(f"shared{k}") for k in range(20)]
    assert all(s is not None and s["by"] in ("a", "b") for s in shared)
    assert json.dumps(shared)  # whole values, never torn
