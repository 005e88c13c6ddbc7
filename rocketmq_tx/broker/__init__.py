"""The broker (Java ``rocketmq-broker``): request processors, metadata managers and periodic services."""
