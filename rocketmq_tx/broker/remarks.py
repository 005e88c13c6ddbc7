"""Remark fragments Java's broker appends to errors (``FAQUrl.suggestTodo``)."""

from __future__ import annotations

__all__ = ["FAQ_URL", "suggest_todo"]

#: 4.9.8's FAQUrl constants (APPLY_TOPIC_URL, SUBSCRIPTION_GROUP_NOT_EXIST, ...) all point here.
FAQ_URL = "http://rocketmq.apache.org/docs/faq/"


def suggest_todo(url: str = FAQ_URL) -> str:
    return f"\nSee {url} for further details."
