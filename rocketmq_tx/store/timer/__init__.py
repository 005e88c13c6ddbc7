"""
Timer messages of RocketMQ 5.x (Java ``org.apache.rocketmq.store.timer``): the on-disk
``timerlog``, ``timerwheel``, ``config/timercheck`` and ``config/timermetrics``, the put
hook that sends a message with a delivery time to ``rmq_sys_wheel_timer``, and the
synchronous :class:`~rocketmq_tx.store.timer.store.TimerMessageStore` the broker drives.
"""
