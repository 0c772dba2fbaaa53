"""A local Ray instance (`--executor ray` without `--ray-address`) listens on 127.0.0.1 only.

On the node's network address, with Ray's authentication off by default, anyone who can reach the
machine could submit work to the instance while an audit runs.
"""

from __future__ import annotations

import pytest

pytest.importorskip("ray", reason="the ray extra is installed by scripts/bootstrap.sh test")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]  # slow: Ray: a local cluster per test


def test_a_local_ray_instance_listens_on_the_loopback_only():
    import ray

    from scoreaudit.runtime.ray_pipelines import RayConnection

    conn = RayConnection(num_cpus=1)
    try:
        conn.get()
        import psutil  # Ray's vendored copy, importable once ray is

        assert [n["NodeManagerAddress"] for n in ray.nodes()] == ["127.0.0.1"]
        listening = []
        for proc in psutil.Process().children(recursive=True):  # GCS, raylet, workers: this run's children
            try:
                conns = proc.net_connections(kind="inet")
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            listening += [(proc.name(), c.laddr.ip, c.laddr.port) for c in conns if c.status == psutil.CONN_LISTEN]
        assert listening, "no Ray server found listening"
        assert all(ip in ("127.0.0.1", "::ffff:127.0.0.1", "::1") for _, ip, _ in listening), listening
    finally:
        conn.close()
    assert not ray.is_initialized()
