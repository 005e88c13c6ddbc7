"""Test doubles and diagnostic servers shipped with rocketmq_tx."""
