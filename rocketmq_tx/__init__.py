"""
rocketmq-tx: Apache RocketMQ rebuilt in Python on Twisted.

Layers (see docs/architecture.md): ``remoting`` is the sans-IO codec, ``net`` drives it
with Twisted, ``blocking`` drives it with plain sockets, ``common`` holds domain values
shared with the store.
"""

__version__ = "0.1.0.dev0"
__all__ = ["__version__"]
