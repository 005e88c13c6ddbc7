"""Java's topic and group name rules (``TopicValidator``, the client's ``Validators``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common.validators import (
    is_store_name_safe,
    is_topic_or_group_illegal,
    validate_group,
    validate_topic,
)

ILLEGAL_CHARS = "allowing only ^[%|a-zA-Z0-9_-]+$"


class NameRuleTests(SynchronousTestCase):
    def test_legal_characters(self) -> None:
        self.assertFalse(is_topic_or_group_illegal("Az09%|_-"))
        self.assertFalse(is_topic_or_group_illegal(""))  # Java: blank is checked apart
        for bad in ("a.b", "a/b", "..", "a b", "t\u00e9", "\u0661", "a\x00", "a\n", "a\\b"):
            self.assertTrue(is_topic_or_group_illegal(bad), bad)

    def test_store_names(self) -> None:
        """Nothing a path could be built of: no separator, no dot, not empty, not a str."""
        self.assertTrue(is_store_name_safe("%RETRY%group_1"))
        for bad in ("", ".", "..", "../../x", "a/b", "/abs", None, b"bytes", 7):
            self.assertFalse(is_store_name_safe(bad), bad)

    def test_topic_remarks(self) -> None:
        self.assertIsNone(validate_topic("a" * 127))
        self.assertEqual(validate_topic(" "), "The specified topic is blank.")
        self.assertEqual(validate_topic("../x"), "The specified topic contains illegal characters, " + ILLEGAL_CHARS)
        self.assertEqual(validate_topic("a" * 128), "The specified topic is longer than topic max length.")

    def test_group_remarks(self) -> None:
        """Validators.checkGroup's order: blank, then length, then characters."""
        self.assertIsNone(validate_group("g" * 255))
        self.assertEqual(validate_group(None), "the specified group is blank")
        self.assertEqual(validate_group("\t"), "the specified group is blank")
        self.assertEqual(validate_group("." * 256), "the specified group is longer than group max length 255.")
        self.assertEqual(validate_group("../../SomeTopic"),
                         "the specified group[../../SomeTopic] contains illegal characters, " + ILLEGAL_CHARS)

    @given(st.text(max_size=40))
    def test_safe_names_stay_in_a_directory(self, name: str) -> None:
        if is_store_name_safe(name):
            self.assertNotIn("/", name)
            self.assertNotIn(".", name)
            self.assertNotIn("\x00", name)
            self.assertTrue(name.isascii())
