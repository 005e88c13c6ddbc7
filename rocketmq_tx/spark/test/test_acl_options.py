"""The Spark source's ACL options: accessKey, secretKey, securityToken."""

from __future__ import annotations

import pickle

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.acl import SessionCredentials
from rocketmq_tx.spark.options import OptionError, ReadOptions, WriteOptions

BASE = {"nameserver": "127.0.0.1:9876", "topic": "T"}


class AclOptionTests(SynchronousTestCase):
    def test_read_and_write(self) -> None:
        raw = dict(BASE, accesskey="RocketMQ", secretkey="s3cr3t-value", securitytoken="t0ken-value")
        read = ReadOptions.parse(raw, streaming=False)
        write = WriteOptions.parse(raw)
        for options in (read, write):
            self.assertEqual(options.credentials, SessionCredentials("RocketMQ", "s3cr3t-value", "t0ken-value"))
            text = repr(options) + str(options)
            self.assertIn("RocketMQ", text)
            self.assertNotIn("s3cr3t-value", text)
            self.assertNotIn("t0ken-value", text)
            self.assertEqual(pickle.loads(pickle.dumps(options)), options)
        self.assertIsNone(ReadOptions.parse(BASE, streaming=False).credentials)

    def test_incomplete(self) -> None:
        for extra in ({"accessKey": "RocketMQ"}, {"secretKey": "s3cr3t-value"}, {"securityToken": "t"},
                      {"accessKey": " ", "secretKey": "s3cr3t-value"}):
            with self.assertRaises(OptionError) as cm:
                WriteOptions.parse(dict(BASE, **extra))
            self.assertNotIn("s3cr3t-value", str(cm.exception))
