"""MessageStoreConfig.from_properties with Java's broker.conf keys."""

from __future__ import annotations

import os

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.store.config import BrokerRole, FlushDiskType, MessageStoreConfig, parse_delay_levels


class ConfigTests(SynchronousTestCase):
    def test_defaults(self) -> None:
        c = MessageStoreConfig(store_path_root_dir="/data/store")
        self.assertEqual(c.store_path_commit_log, os.path.join("/data/store", "commitlog"))
        self.assertEqual(c.mapped_file_size_commit_log, 1 << 30)
        self.assertEqual(c.mapped_file_size_consume_queue, 6_000_000)
        self.assertEqual((c.flush_interval_commit_log, c.flush_commit_log_least_pages,
                          c.flush_commit_log_thorough_interval, c.sync_flush_timeout), (500, 4, 10_000, 5000))
        self.assertEqual((c.file_reserved_time, c.delete_when, c.disk_max_used_space_ratio), (72, "04", 75))
        self.assertEqual(c.flush_disk_type, FlushDiskType.ASYNC_FLUSH)
        self.assertEqual(c.delay_levels()[3], 10_000)
        self.assertEqual(c.delay_levels()[18], 7_200_000)

    def test_from_properties(self) -> None:
        c = MessageStoreConfig.from_properties({
            "storePathRootDir": "/r",
            "mappedFileSizeCommitLog": "1048576",
            "mappedFileSizeConsumeQueue": "6000",
            "flushDiskType": "SYNC_FLUSH",
            "flushIntervalCommitLog": "100",
            "flushCommitLogLeastPages": "2",
            "flushCommitLogThoroughInterval": "2000",
            "syncFlushTimeout": "3000",
            "fileReservedTime": "48",
            "deleteWhen": "04;05",
            "diskMaxUsedSpaceRatio": "88",
            "maxMessageSize": "1024",
            "messageDelayLevel": "1s 2m",
            "checkCRCOnRecover": "false",
            "brokerRole": "SLAVE",
            "brokerName": "ignored",
            "listenPort": "10911",
        })
        self.assertEqual(c.store_path_commit_log, "/r/commitlog")
        self.assertEqual((c.mapped_file_size_commit_log, c.mapped_file_size_consume_queue), (1048576, 6000))
        self.assertEqual(c.flush_disk_type, FlushDiskType.SYNC_FLUSH)
        self.assertEqual((c.flush_interval_commit_log, c.flush_commit_log_least_pages,
                          c.flush_commit_log_thorough_interval, c.sync_flush_timeout), (100, 2, 2000, 3000))
        self.assertEqual((c.file_reserved_time, c.delete_hours(), c.disk_max_used_space_ratio), (48, {4, 5}, 88))
        self.assertEqual(c.max_message_size, 1024)
        self.assertEqual(c.delay_levels(), {1: 1000, 2: 120_000})
        self.assertFalse(c.check_crc_on_recover)
        self.assertEqual(c.broker_role, BrokerRole.SLAVE)

    def test_old_spelling_and_commitlog_path(self) -> None:
        c = MessageStoreConfig.from_properties({"mapedFileSizeCommitLog": "4096", "storePathRootDir": "/r",
                                                "storePathCommitLog": "/elsewhere/cl"})
        self.assertEqual(c.mapped_file_size_commit_log, 4096)
        self.assertEqual(c.store_path_commit_log, "/elsewhere/cl")

    def test_bad_delay_level(self) -> None:
        self.assertRaises(ValueError, parse_delay_levels, "1s 5x")
