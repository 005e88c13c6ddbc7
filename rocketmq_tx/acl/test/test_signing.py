"""ACL 1.0 signatures: the signed content, HMAC-SHA1, the client hook and credentials."""

from __future__ import annotations

import base64
import hashlib
import pickle

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.acl import AclClientRPCHook, AclError, SessionCredentials, credentials_from, sign, signing
from rocketmq_tx.acl.signing import Signer, calc_signature, content_to_sign, fields_content, java_sorted
from rocketmq_tx.remoting import RemotingCommand, RequestCode

PULL_EXT = {"consumerGroup": "group", "topic": "topic", "queueId": "1", "queueOffset": "2", "maxMsgNums": "32",
            "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "15000", "subVersion": "0"}

#: (code, ext fields, body, access key, secret key, token) -> the Signature Java 4.9.8's
#: AclClientRPCHook.doBeforeRequest set on the same request (computed with the 4.9.8 jars).
JAVA_VECTORS = [
    (RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "topicB", "c": "TBW102"}, b"hello", "RocketMQ", "12345678", None,
     "UR1HDa9Rdqv6VzEvYS+rg/ScPXI="),
    # AclClientRPCHookTest's pull header
    (RequestCode.PULL_MESSAGE, PULL_EXT, b"", "ak", "12345678", None, "PZrbkc6auZTq1b8vJ0hWjMCIuus="),
    (RequestCode.PULL_MESSAGE, PULL_EXT, b"", "ak", "12345678", "tok", "tc1uu0h469wvUNrDFd2O5Eg9Cmk="),
    # Java orders U+1F600 (a surrogate pair, 0xD83D...) before U+FF5E; code points would not
    (RequestCode.SEND_MESSAGE_V2, {"k": "中文é", "\U0001F600": "x", "\uff5e": "y"}, b"\x00\xff", "RocketMQ",
     "12345678", None, "qTlX3vy2g89xJkorJ/s+u4M/CEE="),
    (RequestCode.HEART_BEAT, {}, b'{"clientID":"c"}', "RocketMQ", "s\u00e9cr\u00e8t-\u4e2d", None,
     "NV9bje6yZ8sfn5uoocj/DAomJH4="),
    # a 4.9.4+ client signs _UNIQUE_KEY_QUERY like any other field
    (RequestCode.QUERY_MESSAGE, {"topic": "T", "key": "k", "maxNum": "32", "beginTimestamp": "0", "endTimestamp": "1",
                                 "_UNIQUE_KEY_QUERY": "true"}, b"", "RocketMQ", "12345678", None,
     "VbVK7gOH3f0gTzYJl6RnHDlWkXo="),
]


def _hmac_sha1(key: bytes, data: bytes) -> bytes:
    """RFC 2104 by hand, independent of the hmac module."""
    if len(key) > 64:
        key = hashlib.sha1(key).digest()
    key = key.ljust(64, b"\0")
    inner = hashlib.sha1(bytes(k ^ 0x36 for k in key) + data).digest()
    return hashlib.sha1(bytes(k ^ 0x5C for k in key) + inner).digest()


class ContentTests(SynchronousTestCase):
    def test_values_in_java_key_order_then_body(self) -> None:
        ext = {"b": "2", "a": "1", "Signature": "old", "C": "3"}
        self.assertEqual(content_to_sign(ext, b"\x01\x02"), b"312\x01\x02")

    def test_excluded_and_null_values(self) -> None:
        ext = {"a": "1", "_UNIQUE_KEY_QUERY": "true", "n": None}
        self.assertEqual(content_to_sign(ext), b"true1null")  # "_" < "a"
        self.assertEqual(content_to_sign(ext, exclude=("_UNIQUE_KEY_QUERY",)), b"1null")

    def test_java_order_is_utf16(self) -> None:
        keys = ["\U0001F600", "\uff5e", "a", "B", "\ue000"]
        self.assertEqual(java_sorted(keys), ["B", "a", "\U0001F600", "\ue000", "\uff5e"])
        self.assertEqual(java_sorted(["b", "a", "C"]), ["C", "a", "b"])

    def test_lone_surrogate_is_question_mark(self) -> None:
        self.assertEqual(content_to_sign({"a": "x\ud800y"}), b"x?y")


class FieldsContentPlanTests(SynchronousTestCase):
    """fields_content sorts each header shape once; the content must not depend on that."""

    def setUp(self) -> None:
        signing._PLANS.clear()
        self.addCleanup(signing._PLANS.clear)

    def test_same_shape_new_values(self) -> None:
        for i in range(3):
            ext = {"b": f"b{i}", "a": f"a{i}", "Signature": "s", "\U0001F600": "x", "\uff5e": f"y{i}"}
            self.assertEqual(fields_content(ext), f"a{i}b{i}xy{i}".encode())  # Java: U+1F600 (D83D) < U+FF5E
        self.assertEqual(len(signing._PLANS), 1)

    def test_shapes_differ_by_order_exclusion_and_size(self) -> None:
        self.assertEqual(fields_content({"b": "2", "a": "1"}), b"12")
        self.assertEqual(fields_content({"a": "1", "b": "2"}), b"12")  # another arrival order, same content
        self.assertEqual(fields_content({"a": "1"}), b"1")  # one value: not itemgetter's bare value
        self.assertEqual(fields_content({"Signature": "s"}), b"")
        self.assertEqual(fields_content({}), b"")
        ext = {"a": "1", "_UNIQUE_KEY_QUERY": "true"}
        self.assertEqual(fields_content(ext, ("_UNIQUE_KEY_QUERY",)), b"1")
        self.assertEqual(fields_content(ext, ["_UNIQUE_KEY_QUERY"]), b"1")  # any iterable
        self.assertEqual(fields_content(ext), b"true1")
        self.assertEqual(fields_content({"a": None, "b": "2"}), b"null2")

    def test_bounded(self) -> None:
        for i in range(signing.MAX_PLANS + 5):
            self.assertEqual(fields_content({f"k{i}": "v"}), b"v")
        self.assertLessEqual(len(signing._PLANS), signing.MAX_PLANS)
        wide = {f"k{i:03}": str(i % 10) for i in range(signing.MAX_PLAN_KEYS + 1)}
        signing._PLANS.clear()
        self.assertEqual(fields_content(wide), "".join(str(i % 10) for i in range(len(wide))).encode())
        self.assertEqual(signing._PLANS, {})  # too many keys to remember
        long_keys = {"k" * (signing.MAX_PLAN_KEY_CHARS // 2): "1", "m" * (signing.MAX_PLAN_KEY_CHARS // 2 + 1): "2"}
        self.assertEqual(fields_content(long_keys), b"12")
        self.assertEqual(signing._PLANS, {})  # keys too long to hold on to


class SignatureTests(SynchronousTestCase):
    def test_java_vectors(self) -> None:
        for code, ext, body, ak, sk, token, expected in JAVA_VECTORS:
            request = RemotingCommand.request(code, ext, body)
            self.assertEqual(sign(request, ak, sk, token), expected, (code, ext))
            self.assertEqual(request.ext_fields["Signature"], expected)
            self.assertEqual(request.ext_fields["AccessKey"], ak)
            self.assertEqual(request.ext_fields.get("SecurityToken"), token)

    def test_independent_hmac(self) -> None:
        for _code, ext, body, ak, sk, token, expected in JAVA_VECTORS:
            fields = dict(ext, AccessKey=ak, **({"SecurityToken": token} if token else {}))
            data = content_to_sign(fields, body)
            mine = base64.b64encode(_hmac_sha1(sk.encode("utf-8"), data)).decode()
            self.assertEqual(mine, expected)
            self.assertEqual(calc_signature(data, sk), expected)
            self.assertTrue(Signer(sk).verify(data, expected))
            self.assertFalse(Signer(sk).verify(data, expected[:-2] + "A="))
            self.assertFalse(Signer(sk).verify(data, None))

    def test_resign_replaces_the_old_signature(self) -> None:
        request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "topicB", "c": "TBW102"},
                                          b"hello")
        sign(request, "RocketMQ", "wrong-secret")
        self.assertEqual(sign(request, "RocketMQ", "12345678"), "UR1HDa9Rdqv6VzEvYS+rg/ScPXI=")

    def test_empty_secret_refused(self) -> None:
        self.assertRaises(AclError, calc_signature, b"x", "")

    def test_body_hashed_where_it_lies(self) -> None:
        """The broker's path (fields_content + the body, no concatenation) agrees with the
        whole content, on the OpenSSL HMAC object and on hmac.HMAC alike."""
        from rocketmq_tx.acl.signing import fields_content

        for _code, ext, body, ak, sk, token, expected in JAVA_VECTORS:
            fields = dict(ext, AccessKey=ak, **({"SecurityToken": token} if token else {}))
            for signer in (Signer(sk), _pure_python_signer(sk)):
                self.assertEqual(signer.sign_request(fields_content(fields), body), expected)
                self.assertEqual(signer.signature(content_to_sign(fields, body)), expected)
                self.assertTrue(signer.verify_request(fields_content(fields), body, expected))
                self.assertFalse(signer.verify_request(fields_content(fields), body + b"x", expected))
                self.assertFalse(signer.verify_request(fields_content(fields), body, None))

    def test_null_fields_are_removed_before_signing(self) -> None:
        """A None ext field would go out as JSON null, which a Java broker signs as "null" and
        ours drops when decoding: the hook leaves it out, so both brokers see what was signed
        (compat-tests/test_acl_interop.py, case send_null_field)."""
        request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "topicB", "c": "TBW102"},
                                          b"hello")
        expected = sign(request, "RocketMQ", "12345678")
        with_null = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2,
                                            {"a": "pg", "nullish": None, "b": "topicB", "c": "TBW102"}, b"hello")
        self.assertEqual(sign(with_null, "RocketMQ", "12345678"), expected)
        self.assertNotIn("nullish", with_null.ext_fields)
        self.assertEqual(with_null.ext_fields, request.ext_fields)


def _pure_python_signer(secret_key: str) -> Signer:
    """A Signer on hmac.HMAC itself (where hmac.new wraps no OpenSSL object)."""
    import hmac as _hmac

    signer = Signer(secret_key)
    object.__setattr__(signer, "_mac", _hmac.new(secret_key.encode(), digestmod=hashlib.sha1))
    return signer


class CredentialsTests(SynchronousTestCase):
    def test_repr_hides_secrets(self) -> None:
        creds = SessionCredentials("myAccessKey", "topSecretValue", "tokenValue42")
        for text in (repr(creds), str(creds), repr(AclClientRPCHook(creds))):
            self.assertIn("myAccessKey", text)
            self.assertNotIn("topSecretValue", text)
            self.assertNotIn("tokenValue42", text)

    def test_hook_signs_and_pickles(self) -> None:
        hook = AclClientRPCHook(SessionCredentials("RocketMQ", "12345678"))
        copy = pickle.loads(pickle.dumps(hook))
        self.assertEqual(copy, hook)
        request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "topicB", "c": "TBW102"},
                                          b"hello")
        copy("127.0.0.1:10911", request)
        self.assertEqual(request.ext_fields["Signature"], "UR1HDa9Rdqv6VzEvYS+rg/ScPXI=")

    def test_credentials_from(self) -> None:
        self.assertIsNone(credentials_from())
        self.assertEqual(credentials_from("ak", "sk", "t"), SessionCredentials("ak", "sk", "t"))
        creds = SessionCredentials("ak", "sk")
        self.assertIs(credentials_from(credentials=creds), creds)
        for bad in ({"access_key": "ak"}, {"secret_key": "sk"}, {"security_token": "t"},
                    {"access_key": "ak", "secret_key": "sk", "credentials": creds}):
            self.assertRaises(ValueError, credentials_from, **bad)
        self.assertRaises(ValueError, SessionCredentials, "", "sk")
        self.assertRaises(ValueError, SessionCredentials, "ak", "")
