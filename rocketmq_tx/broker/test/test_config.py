"""BrokerSettings: Java's broker.conf keys, the store keys handed to MessageStoreConfig, refusals."""

from __future__ import annotations

import os

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.broker.config import BrokerSettings
from rocketmq_tx.config import ConfigError, read_properties_file
from rocketmq_tx.store.config import BrokerRole, FlushDiskType

SAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "conf", "broker.conf")


class BrokerKeysTests(SynchronousTestCase):
    def test_java_defaults(self) -> None:
        """BrokerConfig/NettyServerConfig defaults as Java's BrokerStartup leaves them."""
        s = BrokerSettings()
        self.assertEqual((s["brokerClusterName"], s["brokerId"], s["listenPort"], s["defaultTopicQueueNums"],
                          s["brokerPermission"], s["autoCreateTopicEnable"], s["autoCreateSubscriptionGroup"]),
                         ("DefaultCluster", 0, 10911, 8, 6, True, True))
        self.assertEqual((s["registerNameServerPeriod"], s["flushConsumerOffsetInterval"], s["longPollingEnable"],
                          s["shortPollingTimeMills"], s["regionId"], s["traceOn"]),
                         (30000, 5000, True, 1000, "DefaultRegion", True))

    def test_java_keys_parse(self) -> None:
        """Typed values from text; store keys are kept apart, not in the broker table."""
        s = BrokerSettings()
        unknown = s.update_from_properties({
            "brokerClusterName": "c1", "brokerName": "broker-b", "brokerId": "0", "listenPort": "20911",
            "namesrvAddr": "a:9876;b:9876", "autoCreateTopicEnable": "false", "defaultTopicQueueNums": " 4 ",
            "longPollingEnable": "FALSE", "flushDiskType": "SYNC_FLUSH", "deleteWhen": "01;02"})
        self.assertEqual(unknown, [])
        self.assertEqual((s["brokerClusterName"], s["brokerName"], s["listenPort"], s["namesrvAddr"],
                          s["autoCreateTopicEnable"], s["defaultTopicQueueNums"], s["longPollingEnable"]),
                         ("c1", "broker-b", 20911, "a:9876;b:9876", False, 4, False))
        self.assertNotIn("flushDiskType", s)
        self.assertEqual(s.store_properties, {"flushDiskType": "SYNC_FLUSH", "deleteWhen": "01;02"})

    def test_store_keys_reach_message_store_config(self) -> None:
        s = BrokerSettings()
        s.update_from_properties({"storePathRootDir": "/data/store", "storePathCommitLog": "/fast/commitlog",
                                  "mappedFileSizeCommitLog": "1048576", "mapedFileSizeConsumeQueue": "6000",
                                  "flushDiskType": "SYNC_FLUSH", "brokerRole": "SYNC_MASTER",
                                  "fileReservedTime": "48", "maxMessageSize": "1024", "checkCRCOnRecover": "false",
                                  "messageDelayLevel": "1s 2s"})
        # a later update adds to the store keys rather than replacing them
        s.update_from_properties({"syncFlushTimeout": "100"})
        cfg = s.message_store_config(store_host=("10.0.0.1", 10911))
        self.assertEqual((cfg.store_path_root_dir, cfg.store_path_commit_log, cfg.mapped_file_size_commit_log,
                          cfg.mapped_file_size_consume_queue, cfg.flush_disk_type, cfg.broker_role,
                          cfg.file_reserved_time, cfg.max_message_size, cfg.check_crc_on_recover,
                          cfg.delay_levels(), cfg.sync_flush_timeout, cfg.store_host),
                         ("/data/store", "/fast/commitlog", 1048576, 6000, FlushDiskType.SYNC_FLUSH,
                          BrokerRole.SYNC_MASTER, 48, 1024, False, {1: 1000, 2: 2000}, 100, ("10.0.0.1", 10911)))

    def test_unknown_keys_returned(self) -> None:
        """Unknown keys come back for a warning; ignored Java store keys (HA, DLedger) do not."""
        s = BrokerSettings()
        unknown = s.update_from_properties({"someFutureKey": "1", "haListenPort": "10912",
                                            "transientStorePoolEnable": "false", "brokerName": "x",
                                            "enableDLegerCommitLog": "false"})
        self.assertEqual(unknown, ["someFutureKey"])
        self.assertEqual(s["brokerName"], "x")

    def test_bad_values_are_one_line_config_errors(self) -> None:
        """A broker or store value that does not parse is a ConfigError naming the key; nothing is applied."""
        cases = {
            "listenPort": "abc", "autoCreateTopicEnable": "yes", "flushDiskType": "X", "brokerRole": "BACKUP",
            "haTransferBatchSize": "0", "haListenPort": "70000", "haMasterAddress": "nohost",
            "mappedFileSizeCommitLog": "big", "maxMessageSize": "0", "messageDelayLevel": "1s 5x",
            "deleteWhen": "four", "diskMaxUsedSpaceRatio": "101", "timerFlushIntervalMs": "0",
            "mappedFileSizeTimerLog": "60", "timerMaxDelaySec": "-1", "timerPrecisionMs": "fast",
        }
        for key, value in cases.items():
            with self.subTest(key=key):
                s = BrokerSettings()
                e = self.assertRaises(ConfigError, s.update_from_properties, {key: value, "brokerName": "changed"})
                self.assertIn(key, str(e))
                self.assertNotIn("\n", str(e))
                self.assertNotEqual(s["brokerName"], "changed")
                self.assertEqual(s.store_properties, {})

    def test_roles_and_broker_ids(self) -> None:
        """A SLAVE needs brokerId > 0 (Java exits otherwise); a master's must be 0 (Java makes it 0)."""
        s = BrokerSettings()
        s.update_from_properties({"brokerRole": "SLAVE", "brokerId": "0"})
        e = self.assertRaises(ConfigError, s.validate)
        self.assertIn("brokerId", str(e))
        s.update_from_properties({"brokerId": "2", "haMasterAddress": "10.0.0.1:10912"})
        s.validate()
        cfg = s.message_store_config()
        self.assertEqual((cfg.broker_role.name, cfg.ha_master_address, cfg.ha_transfer_batch_size),
                         ("SLAVE", "10.0.0.1:10912", 32768))
        s = BrokerSettings()
        s.update_from_properties({"brokerRole": "ASYNC_MASTER", "brokerId": "3"})
        e = self.assertRaises(ConfigError, s.validate)
        self.assertIn("a master's brokerId is 0", str(e))

    def test_print_includes_store_keys(self) -> None:
        """What -p prints: broker, server and store keys with their effective values."""
        s = BrokerSettings()
        s.update_from_properties({"flushDiskType": "SYNC_FLUSH", "storePathRootDir": "/data/store"})
        props = s.to_properties()
        self.assertEqual(props["flushDiskType"], "SYNC_FLUSH")
        self.assertEqual(props["storePathRootDir"], "/data/store")
        self.assertEqual(props["storePathCommitLog"], "/data/store/commitlog")
        self.assertEqual(props["mappedFileSizeCommitLog"], "1073741824")
        self.assertEqual(props["checkCRCOnRecover"], "true")
        self.assertEqual(props["brokerRole"], "ASYNC_MASTER")
        self.assertEqual(props["listenPort"], "10911")
        self.assertEqual(props["autoCreateTopicEnable"], "true")
        self.assertEqual((props["timerWheelEnable"], props["timerPrecisionMs"], props["timerMaxDelaySec"]),
                         ("true", "1000", "259200"))
        # our internal store fields are not Java keys
        for internal in ("storeHost", "handleScheduleMessage", "indexTags"):
            self.assertNotIn(internal, props)

    def test_printed_configuration_reads_back(self) -> None:
        """Every key -p prints is accepted again (no unknown keys, same values)."""
        s = BrokerSettings()
        s.update_from_properties({"flushDiskType": "SYNC_FLUSH", "listenPort": "1"})
        again = BrokerSettings()
        self.assertEqual(again.update_from_properties(s.to_properties()), [])
        self.assertEqual(again.to_properties(), s.to_properties())


class SampleConfigurationTests(SynchronousTestCase):
    def test_sample_parses_without_unknown_keys(self) -> None:
        props = read_properties_file(SAMPLE)
        s = BrokerSettings()
        self.assertEqual(s.update_from_properties(props), [])
        self.assertEqual((s["brokerName"], s["brokerClusterName"], s["listenPort"]),
                         ("broker-a", "DefaultCluster", 10911))
        for key in ("brokerClusterName", "brokerName", "brokerId", "listenPort", "flushDiskType", "brokerRole",
                    "deleteWhen", "fileReservedTime", "autoCreateTopicEnable", "autoCreateSubscriptionGroup",
                    "defaultTopicQueueNums", "messageDelayLevel", "maxMessageSize", "longPollingEnable",
                    "mappedFileSizeCommitLog"):
            self.assertIn(key, props)

    def test_sample_states_java_defaults(self) -> None:
        """Apart from the broker's name, the sample changes nothing: its values are the defaults."""
        s = BrokerSettings()
        s.update_from_properties(read_properties_file(SAMPLE))
        defaults = BrokerSettings().to_properties()
        differ = {k for k, v in s.to_properties().items() if defaults[k] != v}
        self.assertEqual(differ - {"brokerName"}, set())

    def test_sample_documents_its_keys(self) -> None:
        """Each key set or shown commented out follows a comment."""
        with open(SAMPLE, encoding="utf-8") as f:
            lines = [line.rstrip("\n") for line in f]
        for i, line in enumerate(lines):
            if line and not line.startswith("#"):
                j = i - 1
                while j >= 0 and lines[j] and not lines[j].startswith("# "):
                    j -= 1
                self.assertTrue(j >= 0 and lines[j].startswith("# "), line)
