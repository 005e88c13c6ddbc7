"""Tests for the code tables."""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.remoting import RequestCode, ResponseCode, request_code, response_code


class CodeTests(SynchronousTestCase):
    """Well-known values and tolerant lookups."""

    def test_known_values(self) -> None:
        """A sample of numbers that must never change."""
        self.assertEqual((RequestCode.SEND_MESSAGE_V2, RequestCode.PULL_MESSAGE, RequestCode.REGISTER_BROKER,
                          RequestCode.GET_ROUTEINFO_BY_TOPIC, RequestCode.POP_MESSAGE), (310, 11, 103, 105, 200050))
        self.assertEqual((ResponseCode.REQUEST_CODE_NOT_SUPPORTED, ResponseCode.TOPIC_NOT_EXIST,
                          ResponseCode.PULL_NOT_FOUND, ResponseCode.GO_AWAY), (3, 17, 19, 1500))

    def test_aliases(self) -> None:
        """4.9 and 5.x names of the same number are the same member."""
        self.assertIs(ResponseCode.POLLING_FULL, ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED)

    def test_unknown_stays_int(self) -> None:
        """Numbers we do not know survive as ints."""
        self.assertEqual(request_code(4242), 4242)
        self.assertIsInstance(request_code(310), RequestCode)
        self.assertEqual(response_code(-7), -7)
        self.assertIs(response_code(0), ResponseCode.SUCCESS)
