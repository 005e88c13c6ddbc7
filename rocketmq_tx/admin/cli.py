# -*- test-case-name: rocketmq_tx.admin.test.test_cli -*-
"""
``rocketmq-tx-admin``: mqadmin's everyday commands over the blocking admin client.

    rocketmq-tx-admin clusterList -n 127.0.0.1:9876
    rocketmq-tx-admin topicStatus -n 127.0.0.1:9876 -t TopicTest --json

Connection options go after the command, as mqadmin takes ``-n``: ``-n`` (else
``NAMESRV_ADDR``, as Java's tools read it), ``--timeout``, ``--tls`` / ``--tls-config`` (Java's
``tls.*`` properties file, ``/etc/rocketmq/tls.properties`` by default), ``--access-key`` /
``--secret-key`` (else ``$ROCKETMQ_HOME/conf/tools.yml``, the file mqadmin signs with).
Exit status: 0 done, 1 the command failed (one line on stderr), 2 bad usage.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import yaml

from rocketmq_tx.acl import SessionCredentials
from rocketmq_tx.admin import commands as _commands  # noqa: F401  (registers the commands)
from rocketmq_tx.admin.registry import COMMANDS, CommandError, Session
from rocketmq_tx.config import ConfigError
from rocketmq_tx.tlsconfig import TlsSettings

__all__ = ["main", "build_parser", "tools_credentials"]

#: Java ``MixAll.ACL_CONF_TOOLS_FILE``, under ROCKETMQ_HOME
TOOLS_FILE = os.path.join("conf", "tools.yml")


def _common_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("connection")
    group.add_argument("-n", "--namesrvAddr", help="Name server address list, eg: 192.168.0.1:9876;192.168.0.2:9876")
    group.add_argument("--json", action="store_true", help="print the facts as JSON (for scripts)")
    group.add_argument("--timeout", type=float, default=5.0, help="seconds per request (default 5)")
    group.add_argument("--tls", action="store_true", help="talk TLS to name servers and brokers")
    group.add_argument("--tls-config", help="Java's tls.* properties file (default /etc/rocketmq/tls.properties)")
    group.add_argument("--access-key", help="ACL 1.0 AccessKey (default: $ROCKETMQ_HOME/conf/tools.yml)")
    group.add_argument("--secret-key", help="ACL 1.0 SecretKey")
    return common


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rocketmq-tx-admin",
                                     description="RocketMQ admin commands (mqadmin's names and flags).")
    subparsers = parser.add_subparsers(dest="command", metavar="command", required=True)
    common = _common_options()
    for name, cmd in COMMANDS.items():
        sub = subparsers.add_parser(name, help=cmd.help, description=cmd.help, parents=[common])
        cmd.arguments(sub)
    return parser


def tools_credentials(home: str | None) -> SessionCredentials | None:
    """
    The keys of ``$ROCKETMQ_HOME/conf/tools.yml`` (Java ``AclUtils.getAclRPCHook``): none
    when the file is missing or either key is blank.
    """
    if not home:
        return None
    path = os.path.join(home, TOOLS_FILE)
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f) or {}
    if not isinstance(data, dict):
        return None
    access, secret = str(data.get("accessKey") or "").strip(), str(data.get("secretKey") or "").strip()
    return SessionCredentials(access, secret) if access and secret else None


def _session(args: argparse.Namespace, parser: argparse.ArgumentParser) -> Session:
    namesrv = args.namesrvAddr or os.environ.get("NAMESRV_ADDR")
    if not namesrv:
        parser.error("no name server address: give -n or set NAMESRV_ADDR")
    if bool(args.access_key) != bool(args.secret_key):
        parser.error("--access-key and --secret-key go together")
    credentials = (SessionCredentials(args.access_key, args.secret_key) if args.access_key
                   else tools_credentials(os.environ.get("ROCKETMQ_HOME")))
    tls = None
    if args.tls or args.tls_config:
        sources = [{"tls.enable": "true"}]
        if args.tls_config:
            sources.append({"tls.config.file": args.tls_config})
        tls = TlsSettings.from_sources(*sources)
    return Session(namesrv, timeout=args.timeout, tls=tls, credentials=credentials)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        session = _session(args, parser)
    except (ConfigError, OSError, yaml.YAMLError) as e:
        print(f"rocketmq-tx-admin: {e}", file=sys.stderr)
        return 1
    try:
        output = COMMANDS[args.command].run(session, args)
    except CommandError as e:
        print(f"rocketmq-tx-admin {args.command}: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # the one-line error the issue asks for: code/remark or the network failure
        text = " ".join(str(e).split()) or type(e).__name__
        print(f"rocketmq-tx-admin {args.command} failed: {type(e).__name__}: {text}", file=sys.stderr)
        return 1
    finally:
        session.close()
    try:
        sys.stdout.write(output.render(args.json))
        sys.stdout.flush()
    except BrokenPipeError:
        # `... | head`: the reader is gone; keep Python from complaining again at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
