"""Option parsing of the ``rocketmq`` data source: no Spark, no network."""

from __future__ import annotations

import pickle

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.spark.options import OffsetSpec, OptionError, ReadOptions, WriteOptions

NS = {"nameserver": "127.0.0.1:9876", "topic": "T"}


def read(streaming: bool = False, **extra: str) -> ReadOptions:
    # Spark lower-cases option names before a data source sees them.
    return ReadOptions.parse({**NS, **{k.lower(): v for k, v in extra.items()}}, streaming=streaming)


class ReadOptionTests(SynchronousTestCase):
    def test_defaults(self) -> None:
        options = read()
        self.assertEqual((options.topics, options.sub_expression, options.pull_batch_size, options.fail_on_data_loss),
                         (("T",), "*", 32, True))
        self.assertEqual(options.start_spec(streaming=False), OffsetSpec("earliest"))
        self.assertEqual(options.start_spec(streaming=True), OffsetSpec("latest"))
        self.assertEqual(options.ending_offsets, OffsetSpec("latest"))
        self.assertIsNone(options.tls)
        self.assertEqual(options.pull_group, "rocketmq_tx_spark_reader")

    def test_any_case(self) -> None:
        """Names match without regard to case, whoever lower-cased them."""
        options = ReadOptions.parse({"NameServer": "h:1;g:2", "TOPIC": "A, B,A", "subexpression": "x || y",
                                     "MINPARTITIONS": "4", "consumerGroup": "G"}, streaming=False)
        self.assertEqual((options.name_server, options.topics, options.sub_expression, options.min_partitions,
                          options.consumer_group), ("h:1;g:2", ("A", "B"), "x || y", 4, "G"))

    def test_required(self) -> None:
        with self.assertRaisesRegex(OptionError, "nameServer is required"):
            ReadOptions.parse({"topic": "T"}, streaming=False)
        with self.assertRaisesRegex(OptionError, "topic is required"):
            ReadOptions.parse({"nameserver": "h:1"}, streaming=False)

    def test_unknown_and_malformed(self) -> None:
        cases = [
            ({"startingoffset": "earliest"}, "unknown read option 'startingoffset'"),
            ({"nameserver": "nohost"}, "nameServer: 'nohost' is not host:port"),
            ({"pullbatchsize": "0"}, "pullBatchSize: must be at least 1"),
            ({"pulltimeoutms": "soon"}, "pullTimeoutMs: expected an integer"),
            ({"failondataloss": "maybe"}, "failOnDataLoss: expected true or false"),
            ({"startingoffsets": "first"}, "startingOffsets: expected earliest, latest or a JSON object"),
            ({"startingoffsets": '{"U": {}}'}, "topic 'U' is not one of the topics read"),
            ({"startingoffsets": '{"T": {"b": {"x": 1}}}'}, "queue id 'x'"),
            ({"startingoffsets": '{"T": {"b": {"0": -3}}}'}, "must be an integer >= -2"),
            ({"endingoffsets": "earliest"}, "earliest is not a valid end"),
            ({"endingoffsets": '{"T": {"b": {"0": -2}}}'}, "-2 \\(earliest\\) is not a valid end"),
            ({"startingoffsets": '{"T": {"b": {"0": 9}}}', "endingoffsets": '{"T": {"b": {"0": 3}}}'},
             "T/b/0 ends at 3, before its start 9"),
            ({"maxoffsetspertrigger": "10"}, "maxOffsetsPerTrigger applies to streaming reads only"),
            ({"subexpression": "a || "}, "empty tag"),
            ({"tls.client.authserver": "perhaps"}, "tls.client.authServer: expected true or false"),
        ]
        for extra, message in cases:
            with self.subTest(extra=extra):
                with self.assertRaisesRegex(OptionError, message):
                    ReadOptions.parse({**NS, **extra}, streaming=False)
        with self.assertRaisesRegex(OptionError, "endingOffsets applies to batch reads only"):
            read(streaming=True, endingOffsets="latest")

    def test_offsets_json(self) -> None:
        options = read(startingOffsets='{"T": {"broker-a": {"0": 5, "1": -2}, "broker-b": {"3": -1}}}')
        self.assertEqual(options.starting_offsets.explicit(),
                         {("T", "broker-a", 0): 5, ("T", "broker-a", 1): -2, ("T", "broker-b", 3): -1})

    def test_spark_owned_options_ignored(self) -> None:
        self.assertEqual(read(path="/x", checkpointLocation="/y").topics, ("T",))

    def test_tls_and_pickle(self) -> None:
        options = read(**{"tls.enable": "true", "tls.client.authServer": "true", "tls.test.mode.enable": "false",
                          "tls.client.trustCertPath": "/ca.pem"})
        self.assertTrue(options.tls["tls.client.authServer"])
        self.assertEqual(options.tls["tls.client.trustCertPath"], "/ca.pem")
        copy = pickle.loads(pickle.dumps(options))
        self.assertEqual(copy.tls.to_properties(), options.tls.to_properties())
        self.assertEqual(copy.topics, options.topics)
        self.assertIsNone(read(**{"tls.enable": "false", "tls.client.certPath": "/c"}).tls)
        with self.assertRaisesRegex(OptionError, "unknown read option 'tls.server.mode'"):
            read(**{"tls.server.mode": "enforcing"})


class WriteOptionTests(SynchronousTestCase):
    def test_parse(self) -> None:
        options = WriteOptions.parse({"nameserver": "h:1", "topic": "T", "sendtimeoutms": "500"})
        self.assertEqual((options.topic, options.send_timeout_ms, options.producer_group),
                         ("T", 500, "rocketmq_tx_spark_writer"))
        self.assertIsNone(WriteOptions.parse({"nameserver": "h:1"}).topic)
        with self.assertRaisesRegex(OptionError, "unknown write option 'subexpression'"):
            WriteOptions.parse({"nameserver": "h:1", "subexpression": "a"})
        with self.assertRaisesRegex(OptionError, "one default topic"):
            WriteOptions.parse({"nameserver": "h:1", "topic": "A,B"})
