"""Permission bits and strings (Java's Permission)."""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.acl import AclError
from rocketmq_tx.acl.permission import (
    ANY,
    DENY,
    PUB,
    SUB,
    check_permission,
    check_resource_perms,
    parse_perm,
    parse_resource_perms,
    print_resource,
)


class PermissionTests(SynchronousTestCase):
    def test_strings(self) -> None:
        table = {"PUB": PUB, "SUB": SUB, "PUB|SUB": PUB | SUB, "SUB|PUB": PUB | SUB, "DENY": DENY,
                 " PUB\t": PUB, "pub": DENY, "ANY": DENY, "PUB | SUB": DENY, "": DENY, None: DENY}
        for text, bits in table.items():
            self.assertEqual(parse_perm(text), bits, text)

    def test_check(self) -> None:
        self.assertTrue(check_permission(PUB, PUB | SUB))
        self.assertFalse(check_permission(SUB, PUB))
        self.assertFalse(check_permission(PUB, PUB | DENY))
        self.assertTrue(check_permission(ANY, SUB))
        self.assertFalse(check_permission(ANY, DENY))

    def test_resource_entries(self) -> None:
        perms: dict[str, int] = {}
        parse_resource_perms(perms, False, ["groupA=DENY", " groupB = SUB "])
        parse_resource_perms(perms, True, ["topicA=PUB|SUB", "t==SUB"])
        self.assertEqual(perms, {"%RETRY%groupA": DENY, "%RETRY%groupB": SUB, "topicA": PUB | SUB, "t": SUB})
        with self.assertRaises(AclError) as cm:
            parse_resource_perms({}, True, ["topicA"])
        self.assertEqual(cm.exception.message, "Parse resource permission failed for topic:topicA")
        with self.assertRaises(AclError) as cm:
            parse_resource_perms({}, False, ["a=b=c"])
        self.assertEqual(cm.exception.message, "Parse resource permission failed for group:a=b=c")

    def test_admin_update_check(self) -> None:
        check_resource_perms(["a=DENY", "b=PUB|SUB", "c=SUB|PUB"])
        with self.assertRaises(AclError) as cm:
            check_resource_perms(["a"])
        self.assertEqual(cm.exception.message, "Parse Resource format error for a.\n"
                         "The expected resource format is 'Res=Perm'. For example: topicA=SUB")
        with self.assertRaises(AclError) as cm:
            check_resource_perms(["a=deny"])
        self.assertEqual(cm.exception.message, "Parse resource permission error for a=deny.\n"
                         "The expected permissions are 'SUB' or 'PUB' or 'SUB|PUB' or 'PUB|SUB'.")

    def test_print(self) -> None:
        self.assertEqual(print_resource("%RETRY%g", True), "group:g")
        self.assertEqual(print_resource("t", False), "topic:t")
