# -*- test-case-name: rocketmq_tx.broker.test.test_sql92 -*-
"""
SQL92 subscriptions on the broker (``enablePropertyFilter``): CHECK_CLIENT_CONFIG, pulls
with the subscription in the header and from the heartbeat, offsets advanced past
messages that do not match, long polling woken only by a match, the compile cache.

The expressions are compiled by a small stand-in (:func:`stub_compile`), so these tests
hold the broker's integration whatever the parser does; the parser has tests of its own.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from rocketmq_tx.broker.clientmanager import ConsumerFilterManager, FilterCompileError
from rocketmq_tx.broker.processors.pull import SqlFilter
from rocketmq_tx.broker.test.test_processors import props
from rocketmq_tx.broker.test.test_pull import SUSPEND, TOPIC, PullTestCase
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.message import MessageExt
from rocketmq_tx.common.messagecodec import decode_messages, encode_message
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.api import ConsumerData, HeartbeatData, SubscriptionData
from rocketmq_tx.store import reader
from rocketmq_tx.store.reader import record_properties


class StubError(Exception):
    pass


@dataclass(frozen=True)
class StubFilter:
    tags: frozenset[str] | None
    predicate: Callable[[Mapping[str, str]], bool]

    def matches(self, properties: Mapping[str, str]) -> bool:
        return self.predicate(properties)


def _num(p: Mapping[str, str], name: str) -> float | None:
    try:
        return float(p[name])
    except (KeyError, ValueError):
        return None


_EXPRESSIONS: dict[str, StubFilter] = {
    "a > 5": StubFilter(None, lambda p: (_num(p, "a") or 0) > 5),
    "TAGS = 'x' AND a > 5": StubFilter(frozenset({"x"}), lambda p: p.get("TAGS") == "x" and (_num(p, "a") or 0) > 5),
    "b IS NULL": StubFilter(None, lambda p: "b" not in p),
}
compiled: list[str] = []


def stub_compile(expression: str) -> StubFilter:
    compiled.append(expression)
    try:
        return _EXPRESSIONS[expression]
    except KeyError:
        raise StubError(f"Invalid MessageSelector. {expression!r}") from None


class Sql92TestCase(PullTestCase):
    keys = {"enablePropertyFilter": "true"}

    def setUp(self) -> None:
        super().setUp()
        compiled.clear()
        self.controller.consumer_manager.filters = ConsumerFilterManager(capacity=4, compiler=stub_compile)

    def put_props(self, queue_id: int = 0, body: bytes = b"m", **values: str) -> None:
        response = self.send(TOPIC, body=body, queue_id=queue_id, body_props=props(**values))
        self.assertEqual(response.code, ResponseCode.SUCCESS, response.remark)

    def sql_request(self, offset: int, expression: str, *, subscription: bool = True, suspend: bool = False,
                    group: str = "g", sub_version: int = 0) -> dict:
        ext = self.pull_request(offset, expression="*" if subscription else None, suspend=suspend, group=group,
                                sub_version=sub_version)
        if subscription:
            ext["subscription"] = expression
        ext["expressionType"] = "SQL92"
        return ext

    def sql_pull(self, offset: int, expression: str, **kw: object) -> RemotingCommand:
        return self.call(RequestCode.PULL_MESSAGE, self.sql_request(offset, expression, **kw))  # type: ignore[arg-type]

    def bodies(self, response: RemotingCommand) -> list[bytes]:
        self.assertEqual(response.code, ResponseCode.SUCCESS, response.remark)
        return [m.body for m in decode_messages(response.body)]

    def sql_heartbeat(self, expression: str, group: str = "g", version: int = 1) -> None:
        sub = SubscriptionData.build(TOPIC, expression, expression_type="SQL92", sub_version=version)
        data = HeartbeatData("c1", [], [ConsumerData(group, "CONSUME_PASSIVELY", "CLUSTERING",
                                                     "CONSUME_FROM_LAST_OFFSET", [sub])])
        response = self.call(RequestCode.HEART_BEAT, body=fastjson.dumps(data.to_json()))
        self.assertEqual(response.code, ResponseCode.SUCCESS)

    def check(self, expression: str, expression_type: str = "SQL92") -> RemotingCommand:
        body = fastjson.dumps({"clientId": "c1", "group": "g", "subscriptionData": {
            "topic": TOPIC, "subString": expression, "expressionType": expression_type}})
        return self.call(RequestCode.CHECK_CLIENT_CONFIG, body=body)


class CheckClientConfigTests(Sql92TestCase):
    def test_valid_expression(self) -> None:
        self.assertEqual((self.check("a > 5").code, self.check("a > 5").remark), (ResponseCode.SUCCESS, None))
        self.assertEqual(compiled, ["a > 5"])  # compiled once, kept for the pulls

    def test_malformed_expression(self) -> None:
        """Java: SUBSCRIPTION_PARSE_FAILED with the parser's message as the remark."""
        response = self.check("a >")
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SUBSCRIPTION_PARSE_FAILED, "Invalid MessageSelector. 'a >'"))

    def test_unknown_type(self) -> None:
        self.assertEqual(self.check("a > 5", "CLASS").code, ResponseCode.SUBSCRIPTION_PARSE_FAILED)

    def test_tag_type_passes(self) -> None:
        self.assertEqual(self.check("A || B", "TAG").code, ResponseCode.SUCCESS)
        self.assertEqual(compiled, [])


class DisabledTests(Sql92TestCase):
    keys: dict = {}

    def test_check_refused(self) -> None:
        response = self.check("a > 5")
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SYSTEM_ERROR, "The broker does not support consumer to filter message by SQL92"))

    def test_pull_refused(self) -> None:
        response = self.sql_pull(0, "a > 5")
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SYSTEM_ERROR, "The broker does not support consumer to filter message by SQL92"))
        self.assertEqual(compiled, [])


class PullTests(Sql92TestCase):
    def test_filters_by_properties(self) -> None:
        for i in range(8):
            self.put_props(body=b"m%d" % i, TAGS="x" if i % 2 else "y", a=str(i))
        response = self.sql_pull(0, "a > 5")
        self.assertEqual(self.bodies(response), [b"m6", b"m7"])
        self.assertEqual(self.offsets(response), (8, 0, 8))
        self.assertEqual(self.bodies(self.sql_pull(0, "TAGS = 'x' AND a > 5")), [b"m7"])
        self.assertEqual(self.bodies(self.sql_pull(0, "b IS NULL")), [b"m%d" % i for i in range(8)])

    def test_no_match_advances_offset(self) -> None:
        """Nothing matches: PULL_RETRY_IMMEDIATELY (NO_MATCHED_MESSAGE), the next offset past them."""
        for i in range(3):
            self.put_props(a=str(i))
        response = self.sql_pull(0, "a > 5")
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.PULL_RETRY_IMMEDIATELY, "NO_MATCHED_MESSAGE"))
        self.assertEqual(self.offsets(response), (3, 0, 3))
        response = self.sql_pull(3, "a > 5")  # caught up: the usual PULL_NOT_FOUND
        self.assertEqual(response.code, ResponseCode.PULL_NOT_FOUND)

    def test_tag_hash_first(self) -> None:
        """An expression requiring TAGS skips other tags without reading their records."""
        filt = SqlFilter(stub_compile("TAGS = 'x' AND a > 5"))
        self.assertIsNotNone(filt.codes)
        reads: list[bytes] = []
        read_properties = reader.record_properties

        def counting(record: bytes) -> dict[str, str] | None:
            reads.append(record)
            return read_properties(record)

        self.patch(reader, "record_properties", counting)
        for i in range(4):
            self.put_props(TAGS="y", a="9", body=b"y%d" % i)
        self.put_props(TAGS="x", a="9", body=b"x")
        self.assertEqual(self.bodies(self.sql_pull(0, "TAGS = 'x' AND a > 5")), [b"x"])
        self.assertEqual(len(reads), 1)

    def test_malformed_in_header(self) -> None:
        response = self.sql_pull(0, "a >")
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed"))

    def test_from_heartbeat(self) -> None:
        """Without the subscription flag the heartbeat's SQL92 subscription filters."""
        self.sql_heartbeat("a > 5")
        self.assertEqual(compiled, ["a > 5"])  # compiled when it arrived
        self.put_props(a="1", body=b"no")
        self.put_props(a="7", body=b"yes")
        self.assertEqual(self.bodies(self.sql_pull(0, "a > 5", subscription=False)), [b"yes"])
        self.assertEqual(compiled, ["a > 5"])
        response = self.sql_pull(0, "a > 5", subscription=False, sub_version=2)
        self.assertEqual(response.code, ResponseCode.SUBSCRIPTION_NOT_LATEST)

    def test_heartbeat_malformed(self) -> None:
        """Java: the filter data was never registered, so FILTER_DATA_NOT_EXIST."""
        self.sql_heartbeat("a >")
        response = self.sql_pull(0, "a >", subscription=False)
        self.assertEqual((response.code, response.remark), (
            ResponseCode.FILTER_DATA_NOT_EXIST,
            "The broker's consumer filter data is not exist!Your expression may be wrong!"))

    def test_new_expression_by_heartbeat(self) -> None:
        self.sql_heartbeat("a > 5")
        self.put_props(a="9", b="1", body=b"1")
        self.put_props(a="1", body=b"2")
        self.assertEqual(self.bodies(self.sql_pull(0, "", subscription=False)), [b"1"])
        self.sql_heartbeat("b IS NULL", version=2)
        self.assertEqual(self.bodies(self.sql_pull(0, "", subscription=False)), [b"2"])

    def test_tag_subscriptions_unchanged(self) -> None:
        self.put_props(TAGS="TagA", body=b"a")
        self.put_props(TAGS="TagB", body=b"b")
        self.assertEqual(self.bodies(self.pull(0, expression="TagB")), [b"b"])
        self.assertEqual(compiled, [])


class LongPollingTests(Sql92TestCase):
    def pull_later(self, offset: int, expression: str):  # type: ignore[no-untyped-def,override]
        d = self.dispatch(RequestCode.PULL_MESSAGE, self.sql_request(offset, expression, suspend=True))
        self.assertNoResult(d)
        return d

    def test_woken_only_by_a_match(self) -> None:
        d = self.pull_later(0, "a > 5")
        self.put_props(a="1")
        self.put_props(TAGS="x", a="2")
        self.reactor.advance(0)
        self.assertNoResult(d)
        self.put_props(a="6", body=b"wanted")
        self.reactor.advance(0)
        response = self.successResultOf(d)
        self.assertEqual(self.bodies(response), [b"wanted"])
        self.assertEqual(int(response.ext_fields["nextBeginOffset"]), 3)
        self.assertEqual(self.controller.pull_request_hold_service.held(), 0)

    def test_tag_hash_before_properties(self) -> None:
        d = self.pull_later(0, "TAGS = 'x' AND a > 5")
        self.put_props(TAGS="y", a="9")
        self.reactor.advance(0)
        self.assertNoResult(d)
        self.put_props(TAGS="x", a="9", body=b"x")
        self.reactor.advance(0)
        self.assertEqual(self.bodies(self.successResultOf(d)), [b"x"])

    def test_timeout_without_match(self) -> None:
        d = self.pull_later(0, "a > 5")
        self.put_props(a="1")
        self.reactor.advance(SUSPEND / 1000)
        response = self.successResultOf(d)
        self.assertEqual(response.code, ResponseCode.PULL_RETRY_IMMEDIATELY)
        self.assertEqual(int(response.ext_fields["nextBeginOffset"]), 1)


class FilterManagerTests(Sql92TestCase):
    def test_bounded_and_compiled_once(self) -> None:
        filters = ConsumerFilterManager(capacity=2, compiler=stub_compile)
        for _ in range(3):
            filters.get("g1", "T", "SQL92", "a > 5")
        self.assertEqual(compiled, ["a > 5"])
        filters.get("g2", "T", "SQL92", "a > 5")
        filters.get("g3", "T", "SQL92", "a > 5")
        self.assertEqual(len(filters), 2)
        filters.get("g1", "T", "SQL92", "a > 5")  # forgotten, compiled again
        self.assertEqual(len(compiled), 4)

    def test_error_kept(self) -> None:
        filters = ConsumerFilterManager(compiler=stub_compile)
        for _ in range(2):
            with self.assertRaises(FilterCompileError):
                filters.get("g", "T", "SQL92", "a >")
        self.assertEqual(compiled, ["a >"])

    def test_overlong_refused_unparsed(self) -> None:
        filters = ConsumerFilterManager(compiler=stub_compile)
        with self.assertRaises(FilterCompileError):
            filters.get("g", "T", "SQL92", "a = 1 OR " * 10_000 + "a = 2")
        self.assertEqual(compiled, [])

    def test_forgotten_with_the_group(self) -> None:
        self.sql_heartbeat("a > 5")
        filters = self.controller.consumer_manager.filters
        self.assertEqual(len(filters), 1)
        self.controller.channel_closed(self.ctx)
        self.assertEqual(len(filters), 0)

    def test_record_properties(self) -> None:
        record = encode_message(MessageExt("T" * 200, b"body", 0, {"TAGS": "x", "a": "5"}))
        self.assertEqual(record_properties(record), {"TAGS": "x", "a": "5"})
        self.assertIsNone(record_properties(record[:60]))

    def test_record_properties_damaged(self) -> None:
        """A damaged or cut record gives ``None`` or some properties, never an exception."""
        rnd = random.Random(21)
        for n in range(300):
            props = {f"k{j}": "v" * (j + 1) for j in range(n % 4)}
            record = bytearray(encode_message(MessageExt("T" * (1 + n % 200), bytes(n % 50), 0, props)))
            self.assertEqual(record_properties(bytes(record)), props)
            for _ in range(3):
                record[rnd.randrange(len(record))] = rnd.randrange(256)
            record_properties(bytes(record[:rnd.randint(0, len(record))]))


class RealParserTests(PullTestCase):
    """The same paths with ``rocketmq_tx.filter``'s own parser (the default compiler)."""

    keys = {"enablePropertyFilter": "true"}

    def test_pull_and_check(self) -> None:
        for i, tags in enumerate(("TagA", "TagB", "TagA")):
            response = self.send(TOPIC, body=b"m%d" % i, queue_id=0, body_props=props(TAGS=tags, a=str(i * 5)))
            self.assertEqual(response.code, ResponseCode.SUCCESS)
        ext = self.pull_request(0)
        ext["subscription"], ext["expressionType"] = "TAGS = 'TagA' AND a > 1", "SQL92"
        response = self.call(RequestCode.PULL_MESSAGE, ext)
        self.assertEqual([m.body for m in decode_messages(response.body)], [b"m2"])
        body = fastjson.dumps({"group": "g", "subscriptionData": {"topic": TOPIC, "subString": "a >",
                                                                  "expressionType": "SQL92"}})
        response = self.call(RequestCode.CHECK_CLIENT_CONFIG, body=body)
        self.assertEqual(response.code, ResponseCode.SUBSCRIPTION_PARSE_FAILED)
        self.assertIn("Encountered", response.remark or "")
