"""Tests of rocketmq_tx.acl."""
