"""
TLS (``--tls``) and ACL (``--acl``) for both sides: the servers' and the tools' settings, our
Python producer over TLS or signing, and the check that a broker really enforces ACL.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rocketmq_tx.blocking.client import BlockingProducer
from rocketmq_tx.blocking.connection import BlockingRemotingClient
from rocketmq_tx.common.message import Message
from rocketmq_tx.tlsconfig import TlsSettings

from .settings import log

if TYPE_CHECKING:
    from .peers import Target

# TLS (--tls): Java's test mode, the configuration Java ships with: the servers present a
# self-signed certificate and nobody verifies anything; the servers are in enforcing mode,
# so a plaintext connection is refused and every figure of a TLS run is over TLS.
#: JVM system properties of the Java name server and broker (the broker also gets tls.enable
#: so that it registers with the enforcing name server over TLS).
JAVA_TLS_SERVER = {"tls.server.mode": "enforcing", "tls.test.mode.enable": "true", "tls.config.file": "/nonexistent"}
#: JVM system properties of the client tools (ClientConfig.useTLS defaults to tls.enable).
JAVA_TLS_CLIENT = ("-Dtls.enable=true", "-Dtls.test.mode.enable=true", "-Dtls.config.file=/nonexistent")
#: --set overrides of our name server and broker (tls.test.mode.enable=true is our default too;
#: the separate broker also gets tls.enable=true, standalone registers over TLS by itself).
TX_TLS_SERVER = ("tls.server.mode=enforcing", "tls.config.file=")

# ACL (--acl): one account, allowed everything a Producer needs, in every broker's
# $ROCKETMQ_HOME/conf/plain_acl.yml; every client signs with it.
ACL_ACCESS_KEY = "benchUser01"
ACL_SECRET_KEY = "benchSecret1"
ACL_YML = (f"accounts:\n- accessKey: {ACL_ACCESS_KEY}\n  secretKey: {ACL_SECRET_KEY}\n  admin: false\n"
           "  defaultTopicPerm: PUB|SUB\n  defaultGroupPerm: PUB|SUB\n")
#: broker.conf keys of the Java 4.9.7 broker and ours: ACL 1.0.
ACL_SERVER = {"aclEnable": "true"}
#: broker.conf keys of the Java 5.5.0 broker: ACL 2.0, its users and ACLs migrated from plain_acl.yml.
JAVA5_ACL = {
    "authenticationEnabled": "true",
    "authenticationProvider": "org.apache.rocketmq.auth.authentication.provider.DefaultAuthenticationProvider",
    "authenticationMetadataProvider":
        "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider",
    "authorizationEnabled": "true",
    "authorizationProvider": "org.apache.rocketmq.auth.authorization.provider.DefaultAuthorizationProvider",
    "authorizationMetadataProvider":
        "org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider",
    "migrateAuthFromV1Enabled": "true",
}
#: The Producer's options for signing (the benchmark tool's own -a/-ak/-sk).
ACL_PRODUCER_ARGS = ("-a", "true", "-ak", ACL_ACCESS_KEY, "-sk", ACL_SECRET_KEY)


def write_acl_file(home: Path) -> None:
    (home / "conf").mkdir(parents=True, exist_ok=True)
    (home / "conf" / "plain_acl.yml").write_text(ACL_YML)


def java_acl_settings(version: str) -> dict[str, str]:
    return dict(JAVA5_ACL) if version.startswith("5.") else dict(ACL_SERVER)


def py_producer(group: str, namesrv_addr: str, tls: bool = False, acl: bool = False, **kwargs) -> BlockingProducer:
    """A BlockingProducer (the probe and topic maker); *tls*: over TLS, test mode (no verification);
    *acl*: signing with the bench account."""
    if acl:
        kwargs.setdefault("access_key", ACL_ACCESS_KEY)
        kwargs.setdefault("secret_key", ACL_SECRET_KEY)
    producer = BlockingProducer(group, namesrv_addr, **kwargs)
    if tls:  # BlockingProducer has no TLS option; its remoting client does
        producer.client.remoting.close()
        producer.client.remoting = BlockingRemotingClient(
            connect_timeout=producer.client.connect_timeout, tls=TlsSettings.from_sources({"tls.config.file": ""}))
    return producer


def check_acl_enforced(target: Target) -> None:
    """--acl: a send signed with a wrong secret must be refused, or the run would measure a
    broker that checks nothing (a Java 5.x broker ignores aclEnable, for one)."""
    with py_producer("bench_acl_check", target.namesrv_addr, access_key=ACL_ACCESS_KEY, secret_key="notTheSecret",
                     send_timeout=5.0, retry_times_when_send_failed=0) as producer:
        try:
            producer.send(Message(topic="BenchStartup", body=b"must be refused"))
        except Exception as e:  # noqa: BLE001 - any refusal will do
            log(f"{target.name}: a wrong signature is refused ({type(e).__name__}: {str(e)[:160]})")
            return
    raise RuntimeError(f"{target.name} accepted a send signed with a wrong secret: ACL is not enforced")
