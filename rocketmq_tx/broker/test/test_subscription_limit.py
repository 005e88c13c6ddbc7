"""
Subscription expressions a hostile client sends: too long to be one (refused as a
subscription that does not parse) or with very many tags (parsed in linear time).
"""

from __future__ import annotations

from rocketmq_tx.broker.test.test_pull import PullTestCase
from rocketmq_tx.common import fastjson
from rocketmq_tx.remoting import RequestCode, ResponseCode, api
from rocketmq_tx.remoting.api import MAX_SUBSCRIPTION_EXPRESSION_LENGTH

#: 100,000 distinct tags, ~0.7 MB: froze the broker for ~87 s when tags were de-duplicated in a list.
MANY_TAGS = "||".join(f"T{i}" for i in range(100_000))


class SubscriptionLimitTests(PullTestCase):
    def check_client_config(self, expression: str) -> tuple[int, str | None]:
        body = fastjson.dumps({"group": "g", "subscriptionData": {"topic": "T", "subString": expression,
                                                                  "expressionType": "TAG"}})
        response = self.call(RequestCode.CHECK_CLIENT_CONFIG, body=body)
        return response.code, response.remark

    def test_pull_with_too_long_expression(self) -> None:
        """PULL_MESSAGE answers Java's code and remark for a subscription that does not parse, at once."""
        self.put()
        hashed: list[str] = []
        real_hash = api.java_string_hash
        self.patch(api, "java_string_hash", lambda tag: hashed.append(tag) or real_hash(tag))
        response = self.pull(expression=MANY_TAGS)
        self.assertEqual(hashed, [])  # refused by its length, before a single tag is parsed
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed"))

    def test_pull_with_many_tags_within_the_limit(self) -> None:
        """Thousands of tags up to the limit are a subscription like any other."""
        self.put(tags="T9000")
        expression = MANY_TAGS[:MANY_TAGS.index("||T9001")]
        self.assertLessEqual(len(expression), MAX_SUBSCRIPTION_EXPRESSION_LENGTH)
        response = self.pull(expression=expression)
        self.assertEqual((response.code, response.remark), (ResponseCode.SUCCESS, "FOUND"))

    def test_check_client_config(self) -> None:
        """CHECK_CLIENT_CONFIG shares the parse, the limit and the code."""
        self.assertEqual(self.check_client_config(MANY_TAGS[:1000])[0], ResponseCode.SUCCESS)
        code, remark = self.check_client_config(MANY_TAGS)
        self.assertEqual(code, ResponseCode.SUBSCRIPTION_PARSE_FAILED)
        self.assertIn("exceeds 65536", remark)
