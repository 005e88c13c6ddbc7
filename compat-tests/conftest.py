"""pytest fixtures for the Java interop harness (see javaharness.py and README.md).

Fixtures:
  java_classpath_4 / java_classpath_5  session: build compat-tests/java for RocketMQ
                                       4.9.8 / 5.5.0 and return the classpath string
  java_peer                            session, parametrized over ["4.9.8", "5.5.0"]:
                                       (version, classpath)
  java_echo_server                     session, one per java_peer version: a running
                                       official EchoServer, yields ("127.0.0.1", port)

Without java/mvn (or when the build fails) the tests using these fixtures are skipped,
except under CI=true, where they fail.
"""

from __future__ import annotations

import javaharness as jh
import pytest

JAVA_VERSIONS = [jh.VERSIONS["4"], jh.VERSIONS["5"]]  # ["4.9.8", "5.5.0"]


def pytest_collection_modifyitems(config, items):
    """
    The soak tier runs only when asked for (``-m soak``): it takes minutes. Otherwise its
    tests are deselected, not skipped (a skip in CI would read as a missing peer).
    """
    if "soak" in (config.option.markexpr or ""):
        return
    soak = [item for item in items if item.get_closest_marker("soak") is not None]
    if soak:
        config.hook.pytest_deselected(items=soak)
        items[:] = [item for item in items if item.get_closest_marker("soak") is None]


def pytest_configure(config):
    config.addinivalue_line("markers", "compat: runs official Java RocketMQ artifacts (needs java and mvn)")


@pytest.fixture(scope="session")
def java_classpath_4() -> str:
    return jh.build_or_skip("4")


@pytest.fixture(scope="session")
def java_classpath_5() -> str:
    return jh.build_or_skip("5")


@pytest.fixture(scope="session", params=JAVA_VERSIONS)
def java_peer(request) -> tuple[str, str]:
    version = request.param
    key = jh.VERSION_KEYS[version]
    return version, request.getfixturevalue(f"java_classpath_{key}")


@pytest.fixture(scope="session")
def java_echo_server(java_peer):
    """The official NettyRemotingServer running the echo contract, for java_peer's version."""
    version, classpath = java_peer
    try:
        server = jh.start_java(classpath, "EchoServer", ["--port", "0"])
    except jh.HarnessError as e:
        pytest.fail(f"Java {version} EchoServer did not start: {e}", pytrace=False)
    try:
        yield "127.0.0.1", server.port
    finally:
        server.stop()
